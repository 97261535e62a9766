"""Errors a person can read: one line, exit status 2, no traceback (reliability item 10).

Also: a failing provider is one line per failed call; a closed pipe stops quietly; a chat line
whose process died is answered or reported on the next start. Runs in this process where it
can (``main([...])`` with ``capsys``); a subprocess only for the closed pipe and the kill.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runner import run_cli as _cli
from conversations import subject_records
from llm_wire import FakeOpenAI, Reply, Request

from langgraph_topics import TopicMemory
from langgraph_topics.cli.main import CLOSED_PIPE, main
from langgraph_topics.cli.pending_line import PREFIX, pending_directory, read_pending
from langgraph_topics.roles.llm.retries import Backoff
from langgraph_topics.settings import (
    CHEAP_MODEL_ENV,
    ROLE_NAMES,
    STRONG_MODEL_ENV,
)

CLI = [sys.executable, "-m", "langgraph_topics.cli.main"]
BUDGET = "600"
MODEL_VARIABLES = (
    STRONG_MODEL_ENV,
    CHEAP_MODEL_ENV,
    *(f"LANGGRAPH_TOPICS_{role.upper()}_MODEL" for role in ROLE_NAMES),
)


@pytest.fixture(autouse=True)
def _native(monkeypatch: pytest.MonkeyPatch) -> None:
    """No model from the developer's environment: each test sets what it needs."""
    for variable in MODEL_VARIABLES:
        monkeypatch.delenv(variable, raising=False)


def _one_error_line(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    status, _, lines = _cli(capsys, *args)
    assert status == 2, lines
    assert len(lines) == 1, lines
    assert "Traceback" not in lines[0] and lines[0].startswith("langgraph-topics: error: ")
    return lines[0]


def _import(capsys: pytest.CaptureFixture[str], data_dir: Path, thread: str, n: int = 3) -> None:
    records = subject_records(["stocks", "kyoto", "sourdough", "fitness"][:n])
    path = data_dir.parent / f"{thread}.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    args = ["import", str(path), "--data-dir", str(data_dir), "--thread", thread]
    status, _, lines = _cli(capsys, *args, "--budget", BUDGET)
    assert status == 0, lines


# ------------------------------------------------------------------------- bad input: one line


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_an_unreadable_input_file_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    given = tmp_path / "conversation.jsonl"
    if kind == "directory":
        given.mkdir()
    line = _one_error_line(capsys, "import", str(given), "--data-dir", str(tmp_path / "d"))
    assert f"{given}: cannot read the file" in line
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("command", ["topics", "chat", "transcript", "import"])
def test_a_data_dir_that_is_a_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    data_file = tmp_path / "not-a-dir"
    data_file.write_text("keep me", "utf-8")
    args = [command]
    if command == "import":
        good = tmp_path / "ok.jsonl"
        good.write_text(json.dumps({"role": "user", "content": "hi"}) + "\n", "utf-8")
        args.append(str(good))
    line = _one_error_line(capsys, *args, "--data-dir", str(data_file), "--budget", BUDGET)
    assert f"{data_file}: --data-dir is not a directory" in line
    inside = _one_error_line(capsys, "topics", "--data-dir", str(data_file / "sub"))
    assert str(data_file) in inside
    assert data_file.read_text("utf-8") == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["not-a-dir", *(["ok.jsonl"] if command == "import" else [])]
    )


@pytest.mark.parametrize("kind", ["not json", "a directory"])
def test_a_corrupt_settings_file_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    data_dir = tmp_path / "d"
    data_dir.mkdir()
    settings_file = data_dir / "cli.json"
    if kind == "a directory":
        settings_file.mkdir()
        line = _one_error_line(capsys, "topics", "--data-dir", str(data_dir), "--budget", BUDGET)
    else:
        settings_file.write_text('{"budget": 9', "utf-8")
        line = _one_error_line(capsys, "topics", "--data-dir", str(data_dir))
    assert str(settings_file) in line
    assert sorted(p.name for p in data_dir.iterdir()) == ["cli.json"]  # nothing else written


def test_an_unknown_provider_is_one_line_naming_the_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STRONG_MODEL_ENV, "nosuch:model-x")
    line = _one_error_line(capsys, "topics", "--data-dir", str(tmp_path / "d"))
    assert f"{STRONG_MODEL_ENV}='nosuch:model-x'" in line
    assert "unknown model provider 'nosuch'" in line and "openai" in line
    assert not (tmp_path / "d").exists()


def test_a_missing_api_key_is_one_line_naming_the_setting_and_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv(CHEAP_MODEL_ENV, "openai:gpt-4o-mini")
    line = _one_error_line(capsys, "chat", "--data-dir", str(tmp_path / "d"))
    assert f"{CHEAP_MODEL_ENV}='openai:gpt-4o-mini'" in line and "OPENAI_API_KEY" in line
    assert not (tmp_path / "d").exists()


# ---------------------------------------------------------------------------- a closed pipe


def _closed_pipe_run(*args: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    process.stdout.close()  # the reader is gone before the first line is written (| head)
    return process


def test_a_closed_pipe_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data_dir = tmp_path / "d"
    _import(capsys, data_dir, "bob", n=1)  # a table and a transcript to print
    topics = _closed_pipe_run("topics", "--data-dir", str(data_dir), "--thread", "bob")
    transcript = _closed_pipe_run("transcript", "--data-dir", str(data_dir), "--thread", "bob")
    for process in (topics, transcript):
        _, err = process.communicate(timeout=120)
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert "pipe" in err
        assert process.returncode == CLOSED_PIPE == 2


# --------------------------------------------------------------------- a failing provider


@pytest.fixture
def wire() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    yield server
    server.close()


def _use_models(monkeypatch: pytest.MonkeyPatch, wire: FakeOpenAI, *tiers: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    monkeypatch.setenv("OPENAI_BASE_URL", wire.url)
    for variable in tiers:
        monkeypatch.setenv(variable, "openai:fake")


def test_a_failing_provider_is_one_line_per_failed_call(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    wire: FakeOpenAI,
) -> None:
    data_dir = tmp_path / "d"
    # Topics imported offline: at this budget the last 20 messages alone pass the trigger, so
    # a split waits for 10 older ones (split_batch) and four subjects' messages make topics.
    _import(capsys, data_dir, "t", n=4)
    for role in ("responder", "topic_window", "splitter", "brief_writer", "index_router"):
        wire.on(role, lambda _: Reply(status=500, text="the server is down"))
    monkeypatch.setattr(Backoff, "delay", lambda self, attempt: 0.0)
    _use_models(monkeypatch, wire, STRONG_MODEL_ENV, CHEAP_MODEL_ENV)
    lines = "What did we say about valuation?\nAnd the temples in Kyoto?\nThanks!\n"
    status, out, err = _cli(
        capsys, "chat", "--data-dir", str(data_dir), "--thread", "t", stdin=lines
    )
    assert status == 0
    assert len([line for line in out.splitlines() if line.strip()]) == 3  # every line answered
    failed_calls = len(wire.requests) // 3  # each call is tried three times (two retries)
    # Three responder calls and the topic windows the governor had the model read.
    assert len(wire.requests) % 3 == 0 and failed_calls >= 3 + 1
    assert {r.role for r in wire.requests} >= {"responder", "topic_window"}
    assert len(err) == failed_calls, "\n".join(err)
    for line in err:
        assert (
            line.startswith("langgraph-topics: warning: ") and "(fake): model call failed" in line
        )
        assert "the server is down" in line


def test_verbose_shows_the_traceback_of_a_failed_call(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    wire: FakeOpenAI,
) -> None:
    wire.on("responder", lambda _: Reply(status=500, text="the server is down"))
    monkeypatch.setattr(Backoff, "delay", lambda self, attempt: 0.0)
    _use_models(monkeypatch, wire, STRONG_MODEL_ENV)
    args = ["chat", "--data-dir", str(tmp_path / "d"), "--verbose"]
    status, out, err = _cli(capsys, *args, stdin="hello\n")
    assert status == 0 and out.strip()
    text = "\n".join(err)
    assert "retrying" in text and "Traceback" in text and "the server is down" in text


# ------------------------------------------------------------------------ the pending line


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_an_interactive_chat_says_where_it_is_and_how_to_quit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "d"
    monkeypatch.setattr(sys, "stdin", _Terminal("/quit\nnever sent\n"))
    status = main(["chat", "--data-dir", str(data_dir), "--thread", "alice"])
    out, err = capsys.readouterr()
    assert status == 0 and err == ""
    welcome = out.splitlines()[0]
    for shown in ("'alice'", str(data_dir), "offline", "/quit", "Ctrl-D"):
        assert shown in welcome, welcome
    with TopicMemory(data_dir=data_dir) as memory:
        assert memory.state("alice").get("messages", []) == []


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def _leave_pending(data_dir: Path, text: str, message_id: str) -> None:
    """A pending line as a killed chat leaves it: its session's lock file (free) and line."""
    directory = pending_directory(data_dir, "t")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{PREFIX}dead.lock").touch()
    entry = {"text": text, "message_id": message_id, "pid": _dead_pid(), "started_at": "2020"}
    (directory / f"{PREFIX}dead.json").write_text(json.dumps(entry), "utf-8")


def _pending_files(data_dir: Path) -> list[Path]:
    return list(pending_directory(data_dir, "t").glob(f"{PREFIX}*"))


def test_an_answer_never_shown_is_recovered_on_the_next_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "d"
    args = ["chat", "--data-dir", str(data_dir), "--thread", "t"]
    status, first, _ = _cli(capsys, *args, stdin="Let's plan the Kyoto trip\n")
    assert status == 0 and first.strip()
    assert _pending_files(data_dir) == []  # cleared once the answer was printed
    with TopicMemory(data_dir=data_dir) as memory:
        sent = memory.state("t")["messages"][0].id
    # As if the process had died after the turn was saved, before its answer was printed.
    _leave_pending(data_dir, "Let's plan the Kyoto trip", sent)
    status, out, err = _cli(capsys, *args, stdin="")
    assert status == 0
    assert len(err) == 1 and "recovered" in err[0] and "Kyoto trip" in err[0], err
    assert out == first  # the same answer, not a second turn
    assert _pending_files(data_dir) == []
    with TopicMemory(data_dir=data_dir) as memory:
        assert len(memory.state("t")["messages"]) == 2


def test_a_line_lost_before_its_turn_was_saved_is_answered_on_the_next_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "d"
    _leave_pending(data_dir, "What about the budget?", "msg-lost")
    args = ["chat", "--data-dir", str(data_dir), "--thread", "t"]
    status, out, err = _cli(capsys, *args, stdin="")
    assert status == 0 and out.strip()
    assert len(err) == 1 and "interrupted" in err[0] and "What about the budget?" in err[0], err
    assert _pending_files(data_dir) == []
    with TopicMemory(data_dir=data_dir) as memory:
        messages = memory.state("t")["messages"]
        assert str(messages[0].content) == "What about the budget?" and len(messages) == 2
        assert messages[0].id == "msg-lost"  # sent with the id it was pending under


def test_a_chat_killed_mid_turn_is_answered_on_the_next_start(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    wire: FakeOpenAI,
) -> None:
    released = threading.Event()

    def responder(request: Request) -> Reply:
        released.wait(60)  # the first chat is killed while it waits here
        return Reply(text="See Kinkaku-ji early." if "temples" in request.prompt_text else "?")

    wire.on("responder", responder)
    data_dir = tmp_path / "d"
    env: dict[str, Any] = {
        key: value for key, value in os.environ.items() if key not in MODEL_VARIABLES
    }
    env |= {"OPENAI_API_KEY": "dummy", "OPENAI_BASE_URL": wire.url, STRONG_MODEL_ENV: "openai:fake"}
    process = subprocess.Popen(
        [*CLI, "chat", "--data-dir", str(data_dir), "--thread", "t"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdin is not None
    process.stdin.write("which temples should we see in Kyoto?\n")
    process.stdin.flush()
    deadline = time.monotonic() + 90
    while not wire.of_role("responder"):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    (line,) = pending_directory(data_dir, "t").glob(f"{PREFIX}*.json")
    pending = read_pending(line)
    assert pending is not None and pending.text == "which temples should we see in Kyoto?"
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    released.set()

    _use_models(monkeypatch, wire, STRONG_MODEL_ENV)
    status, out, err = _cli(capsys, "chat", "--data-dir", str(data_dir), "--thread", "t", stdin="")
    assert status == 0
    assert len(err) == 1 and "interrupted" in err[0] and "temples" in err[0], err
    assert out.strip() == "See Kinkaku-ji early."
    assert _pending_files(data_dir) == []
    with TopicMemory(data_dir=data_dir) as memory:
        contents = [str(m.content) for m in memory.state("t")["messages"]]
        assert contents.count("which temples should we see in Kyoto?") == 1  # not asked twice
        assert memory.check("t").ok
