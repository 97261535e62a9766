"""Issue 41, messages lost in recovery: a pending line is found by its message id, a dead
writer is told by its lock (not its process id), and a lost checkpoint database is refused."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli_runner import run_cli as _cli
from conversations import subject_records
from langchain_core.messages import AIMessage, HumanMessage

from langgraph_topics import TopicMemory
from langgraph_topics.checks import LostCheckpointsError
from langgraph_topics.cli.pending_line import LEGACY_FILE, PREFIX, pending_directory
from langgraph_topics.settings import CHEAP_MODEL_ENV, STRONG_MODEL_ENV

THREAD = "t"

_KILLED_CHAT = textwrap.dedent(
    """
    import os, signal, sys
    from langgraph_topics.cli import chat
    from langgraph_topics.cli.main import main
    from langgraph_topics.cli.pending_line import Abandoned, ChatSession

    point, data_dir = sys.argv[1], sys.argv[2]
    written = []
    write, send, forget = ChatSession.write, chat._send, Abandoned.forget

    def killing_write(self, text, message_id=None):
        entry = write(self, text, message_id)
        written.append(entry)
        if point == "saved" and len(written) == 2:
            os.kill(os.getpid(), signal.SIGKILL)  # the second line is pending, nothing sent
        return entry

    def killing_send(memory, thread_id, entry):
        reply = send(memory, thread_id, entry)
        if point == "answered" and len(written) == 2:
            os.kill(os.getpid(), signal.SIGKILL)  # its turn is saved, its answer unprinted
        return reply

    def killing_forget(self):
        if point == "taking over":
            # This session holds the dead one's line now, and the dead one's file is still
            # there: one line pending in two files, under one message id.
            os.kill(os.getpid(), signal.SIGKILL)
        forget(self)

    ChatSession.write, chat._send, Abandoned.forget = killing_write, killing_send, killing_forget
    sys.exit(main(["chat", "--data-dir", data_dir, "--thread", "t"]))
    """
)


@pytest.fixture(autouse=True)
def _native(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in (STRONG_MODEL_ENV, CHEAP_MODEL_ENV):
        monkeypatch.delenv(variable, raising=False)


def _chat(
    capsys: pytest.CaptureFixture[str], data_dir: Path, stdin: str = ""
) -> tuple[int, str, list[str]]:
    return _cli(capsys, "chat", "--data-dir", str(data_dir), "--thread", THREAD, stdin=stdin)


def _pending_files(data_dir: Path) -> list[str]:
    directory = pending_directory(data_dir, THREAD)
    return sorted(p.name for p in directory.glob(f"{PREFIX}*")) if directory.is_dir() else []


def _turns(data_dir: Path) -> tuple[list[str], list[str]]:
    """The user lines and the answers of the thread's working set."""
    with TopicMemory(data_dir=data_dir) as memory:
        messages = memory.state(THREAD).get("messages", [])
        assert memory.check(THREAD).ok
    users = [str(m.content) for m in messages if isinstance(m, HumanMessage)]
    answers = [str(m.content) for m in messages if isinstance(m, AIMessage)]
    return users, answers


def _killed_chat(data_dir: Path, point: str, stdin: str) -> list[str]:
    """Run ``chat`` in a process that kills itself (-9) at ``point``; its answers printed."""
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_CHAT, point, str(data_dir)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).parent,
    )
    assert killed.returncode == -9, killed.stderr[-3000:]
    return [line for line in killed.stdout.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("point", "pid_reused"), [("saved", False), ("answered", False), ("saved", True)]
)
def test_a_line_typed_twice_and_killed_right_after_is_answered_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], point: str, pid_reused: bool
) -> None:
    data_dir = tmp_path / "d"
    assert len(_killed_chat(data_dir, point, "yes\nyes\n")) == 1  # the first line's answer
    assert len(_pending_files(data_dir)) == 2  # the dead session's lock and its line
    if pid_reused:  # the killed chat's pid now belongs to a live process: this one
        (line,) = pending_directory(data_dir, THREAD).glob(f"{PREFIX}*.json")
        entry = json.loads(line.read_text("utf-8"))
        line.write_text(json.dumps({**entry, "pid": os.getpid()}), "utf-8")

    status, out, err = _chat(capsys, data_dir)
    assert status == 0 and out.strip(), err
    users, answers = _turns(data_dir)
    assert users == ["yes", "yes"] and len(answers) == 2  # each line once, each answered once
    assert len(err) == 1, err
    if point == "saved":
        assert err[0].startswith("langgraph-topics: interrupted: 'yes' was not answered"), err
    else:
        assert "recovered: the answer to 'yes'" in err[0], err
    assert out.strip() == answers[-1].strip()
    assert _pending_files(data_dir) == []

    status, out, err = _chat(capsys, data_dir)  # settled once: nothing more to recover
    assert (status, out, err) == (0, "", [])
    assert _turns(data_dir)[0] == ["yes", "yes"]


def test_a_recovery_killed_while_taking_a_line_over_answers_it_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "d"
    assert len(_killed_chat(data_dir, "saved", "yes\nyes\n")) == 1
    assert _killed_chat(data_dir, "taking over", "") == []
    assert len(_pending_files(data_dir)) == 4  # the line, pending in both dead sessions

    status, out, err = _chat(capsys, data_dir)
    assert status == 0 and len(out.strip().splitlines()) == 1, (out, err)
    assert len(err) == 1 and err[0].startswith("langgraph-topics: interrupted: 'yes'"), err
    users, answers = _turns(data_dir)
    assert users == ["yes", "yes"] and len(answers) == 2
    assert out.strip() == answers[-1].strip()
    assert _pending_files(data_dir) == []


def _leave_line(data_dir: Path, text: str, pid: int, session: str = "dead") -> Path:
    """A session's files as a killed chat leaves them: its lock file, unlocked, and its line."""
    directory = pending_directory(data_dir, THREAD)
    directory.mkdir(parents=True, exist_ok=True)
    lock = directory / f"{PREFIX}{session}.lock"
    lock.touch()
    entry = {"text": text, "message_id": f"msg-{session}", "pid": pid, "started_at": "2026"}
    (directory / f"{PREFIX}{session}.json").write_text(json.dumps(entry), "utf-8")
    return lock


def test_a_pending_line_whose_pid_a_live_process_now_holds_is_answered_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "d"
    assert _chat(capsys, data_dir, "hello there\n")[0] == 0
    # The dead writer's pid now belongs to a live process (this one's parent, or this one).
    for session, pid in (("a", os.getppid()), ("b", os.getpid())):
        _leave_line(data_dir, f"what about {session}?", pid, session)
    status, out, err = _chat(capsys, data_dir)
    assert status == 0 and len(out.strip().splitlines()) == 2, (out, err)
    assert [line.split(": ", 2)[1] for line in err] == ["interrupted"] * 2, err
    users, answers = _turns(data_dir)
    assert users == ["hello there", "what about a?", "what about b?"] and len(answers) == 3
    with TopicMemory(data_dir=data_dir) as memory:
        ids = [m.id for m in memory.state(THREAD)["messages"] if isinstance(m, HumanMessage)]
    assert ids[1:] == ["msg-a", "msg-b"]  # sent with the ids they were pending under
    assert _pending_files(data_dir) == []


def test_a_line_a_live_session_is_answering_is_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "d"
    lock = _leave_line(data_dir, "still being answered", 1)
    fd = os.open(lock, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # the live session holds its lock
    try:
        assert _chat(capsys, data_dir) == (0, "", [])
        assert len(_pending_files(data_dir)) == 2
    finally:
        os.close(fd)
    assert _turns(data_dir)[0] == []


def test_a_dead_line_the_thread_holds_with_its_answer_is_shown_not_sent_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "d"
    assert _chat(capsys, data_dir, "yes\n")[0] == 0
    with TopicMemory(data_dir=data_dir) as memory:
        first = memory.state(THREAD)["messages"][0].id
    # A second "yes" pending under another id is another line: answered, not taken for this one.
    _leave_line(data_dir, "yes", 1, "second")
    entry = {"text": "yes", "message_id": first, "pid": 1, "started_at": "2026"}
    (_leave_line(data_dir, "yes", 1, "first").with_suffix(".json")).write_text(
        json.dumps(entry), "utf-8"
    )
    status, out, err = _chat(capsys, data_dir)
    assert status == 0 and len(err) == 2, err
    assert sorted(line.split(": ", 2)[1] for line in err) == ["interrupted", "recovered"], err
    users, answers = _turns(data_dir)
    assert users == ["yes", "yes"] and len(answers) == 2


# ----------------------------------------------------------------- a lost checkpoint database


def _split_thread(tmp_path: Path) -> Path:
    """A thread with topic files, imported by a process that has ended (as a user's would)."""
    data_dir = tmp_path / "d"
    records = subject_records(["stocks", "kyoto", "sourdough"])
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records), "utf-8")
    args = ["--data-dir", str(data_dir), "--thread", THREAD, "--budget", "800"]
    done = subprocess.run(
        [sys.executable, "-m", "langgraph_topics.cli.main", "import", str(path), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return data_dir


def _topic_files(data_dir: Path) -> dict[str, str]:
    return {
        str(p.relative_to(data_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((data_dir / "threads").glob("*/topics/*.jsonl"))
    }


@pytest.mark.parametrize("how", ["deleted", "emptied"])
def test_a_lost_checkpoint_database_is_one_line_and_nothing_starts_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    data_dir = _split_thread(tmp_path)
    files = _topic_files(data_dir)
    assert files
    database = data_dir / "checkpoints.sqlite"
    for extra in ("-wal", "-shm"):
        Path(f"{database}{extra}").unlink(missing_ok=True)
    if how == "deleted":
        database.unlink()
    else:
        database.write_bytes(b"")
    data = ("--data-dir", str(data_dir), "--thread", THREAD)
    commands = (
        ["chat"],
        ["context", "the Kyoto trip"],
        ["check"],
        ["import", str(tmp_path / "c.jsonl")],
    )
    for command in commands:
        status, out, err = _cli(capsys, *command, *data, stdin="hello again\n")
        assert status == 2 and out == "", (command, out, err)
        assert len(err) == 1, (command, err)
        line = err[0]
        assert str(database) in line and "restore" in line, line
        assert "no checkpoint of thread 't'" in line and "other branches" not in line, line
    assert _topic_files(data_dir) == files  # nothing written, nothing lost from the topic files
    with TopicMemory(data_dir=data_dir) as memory:
        assert memory.checkpointer.get_tuple(memory.run_config(THREAD)) is None
        with pytest.raises(LostCheckpointsError, match="checkpoints.sqlite"):
            memory.check(THREAD)  # the API says so too, as a typed error


def _thread_files(data_dir: Path) -> dict[str, str]:
    return {
        str(p.relative_to(data_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((data_dir / "threads").rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("how", ["deleted", "emptied"])
def test_a_lost_checkpoint_database_of_a_thread_never_split_is_one_line_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    # Its messages were in the database only: no topic file shows the thread existed.
    data_dir = tmp_path / "d"
    done = subprocess.run(
        [sys.executable, "-m", "langgraph_topics.cli.main", "chat"]
        + ["--data-dir", str(data_dir), "--thread", THREAD],
        input="hello\nyes\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and len(done.stdout.strip().splitlines()) == 2, done.stderr
    assert not list((data_dir / "threads").glob("*/topics/*.jsonl"))
    database = data_dir / "checkpoints.sqlite"
    for extra in ("-wal", "-shm"):
        Path(f"{database}{extra}").unlink(missing_ok=True)
    if how == "deleted":
        database.unlink()
    else:
        database.write_bytes(b"")
    files = _thread_files(data_dir)
    records = tmp_path / "c.jsonl"
    records.write_text(json.dumps({"role": "user", "content": "an old line"}), "utf-8")
    data = ("--data-dir", str(data_dir), "--thread", THREAD)
    for command in (["chat"], ["context", "hello"], ["check"], ["import", str(records)]):
        status, out, err = _cli(capsys, *command, *data, stdin="hello again\n")
        assert status == 2 and out == "" and len(err) == 1, (command, out, err)
        assert str(database) in err[0] and "no checkpoint of thread 't'" in err[0], err
        assert ".checkpointed" in err[0] and "restore" in err[0], err
    assert _thread_files(data_dir) == files  # nothing written
    with TopicMemory(data_dir=data_dir) as memory:
        with pytest.raises(LostCheckpointsError, match="none was split"):
            memory.check(THREAD)


def test_a_new_thread_is_not_taken_for_a_lost_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = _split_thread(tmp_path)
    status, out, err = _cli(
        capsys, "chat", "--data-dir", str(data_dir), "--thread", "other", stdin="hi\n"
    )
    assert status == 0 and out.strip() and err == []


def test_an_earlier_versions_pending_line_is_reported_not_sent_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "d"
    directory = pending_directory(data_dir, THREAD)
    directory.mkdir(parents=True)
    old = {"text": "yes", "pid": 1, "started_at": "2020", "token": "x"}
    (directory / LEGACY_FILE).write_text(json.dumps(old), "utf-8")
    status, out, err = _chat(capsys, data_dir)
    assert status == 0 and out == "" and len(err) == 1, err
    assert "'yes'" in err[0] and "send it again" in err[0], err
    assert not (directory / LEGACY_FILE).exists()
    assert _turns(data_dir)[0] == []  # not sent: it may have been answered already
