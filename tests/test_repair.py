"""``langgraph-topics repair``: a thread rebuilt from topic files, checkpoints and pending lines.

Each test damages a copy of a small data directory (issue 41 item 4): the checkpoint database
garbled or deleted, a topic file deleted or cut; ``check`` names the command, ``repair``
recovers every message something still holds, names what is gone, and leaves the thread usable.
"""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from cli_runner import run_cli as cli
from damaged_data import (
    BUDGET,
    THREAD,
    command_args,
    garble,
)

from langgraph_topics import TopicMemory
from langgraph_topics.cli.pending_line import PREFIX
from langgraph_topics.repair import repair_data_dir
from langgraph_topics.services import thread_directory

pytest_plugins = ["damaged_data"]  # the built data directory and its copies


def held_ids(data_dir: Path) -> list[str]:
    with TopicMemory(data_dir=data_dir, budget_tokens=int(BUDGET)) as memory:
        return [m["id"] for m in memory.transcript(THREAD)]


def topic_files(data_dir: Path) -> list[Path]:
    return sorted((thread_directory(data_dir, THREAD) / "topics").glob("*.jsonl"))


def test_repair_restores_a_deleted_topic_file_from_the_checkpoints(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    everything = held_ids(data_dir)
    topic_files(data_dir)[0].unlink()
    status, out, _ = cli(capsys, *command_args("check", data_dir))
    assert status == 1
    assert f"langgraph-topics repair --thread {THREAD}" in out
    status, out, lines = cli(capsys, "repair", *command_args("x", data_dir)[1:])
    assert status == 0, (out, lines)
    assert f"{len(everything)} messages recovered" in out and "gone" not in out
    assert "kept in" in out
    status, out, lines = cli(capsys, *command_args("check", data_dir))
    assert status == 0, (out, lines)
    assert held_ids(data_dir) == everything  # same ids, same order
    status, out, lines = cli(capsys, *command_args("chat", data_dir), stdin="ROE again?\n")
    assert status == 0 and out.strip(), lines


def test_repair_of_a_cut_topic_file(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    everything = held_ids(data_dir)
    biggest = max(topic_files(data_dir), key=lambda path: path.stat().st_size)
    os.truncate(biggest, biggest.stat().st_size // 2)
    status, out, lines = cli(capsys, "repair", *command_args("x", data_dir)[1:])
    assert status == 0, (out, lines)
    status, out, lines = cli(capsys, *command_args("check", data_dir))
    assert status == 0, (out, lines)
    assert held_ids(data_dir) == everything


def test_repair_of_a_garbled_database_keeps_the_topic_files_and_the_pending_line(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = thread_directory(data_dir, THREAD)
    split = {
        json.loads(line)["id"]
        for path in topic_files(data_dir)
        for line in path.read_text("utf-8").splitlines()
        if json.loads(line).get("type") == "message"
    }
    assert split
    pending = {
        "text": "and what about the dividend yield?",
        "message_id": "msg-pending00001",
        "pid": 1,
        "started_at": "2030-01-01T00:00:00+00:00",
    }
    (root / f"{PREFIX}deadsession.json").write_text(json.dumps(pending), "utf-8")
    (root / f"{PREFIX}deadsession.lock").touch()  # a dead session's lock: free
    garble(data_dir / "checkpoints.sqlite")
    status, _, lines = cli(capsys, *command_args("check", data_dir))
    assert status == 2 and "repair" in lines[0]
    status, out, lines = cli(capsys, "repair", "--data-dir", str(data_dir), "--budget", BUDGET)
    assert status == 1, (out, lines)  # the unsplit messages were only in the database
    assert "checkpoint database: damaged" in out
    assert "no checkpoint of it was readable" in out
    assert pending["text"] in out
    kept = list(data_dir.glob("repair-*/checkpoints.sqlite"))
    assert len(kept) == 1  # the damaged file is kept, not deleted
    status, out, lines = cli(capsys, *command_args("check", data_dir))
    assert status == 0, (out, lines)
    ids = held_ids(data_dir)
    assert split <= set(ids) and ids[-1] == pending["message_id"]
    status, out, lines = cli(capsys, *command_args("chat", data_dir), stdin="")
    assert status == 0 and out.strip(), lines  # the pending line is answered
    assert any("interrupted" in line and pending["text"] in line for line in lines), lines
    with TopicMemory(data_dir=data_dir, budget_tokens=int(BUDGET)) as memory:
        roles = [m["role"] for m in memory.transcript(THREAD)]
    assert roles[-2:] == ["user", "assistant"]
    status, out, lines = cli(capsys, *command_args("chat", data_dir), stdin="hello again\n")
    assert status == 0 and out.strip() and not lines, lines


def test_repair_of_a_deleted_database(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for path in data_dir.glob("checkpoints.sqlite*"):
        path.unlink()
    status, _, lines = cli(capsys, *command_args("check", data_dir))
    assert status == 2 and "langgraph-topics repair" in lines[0], lines
    status, out, lines = cli(capsys, "repair", "--data-dir", str(data_dir), "--budget", BUDGET)
    assert status == 1 and f"thread {THREAD!r}" in out, (out, lines)
    status, out, lines = cli(capsys, *command_args("check", data_dir))
    assert status == 0, (out, lines)


def test_repair_with_nothing_to_repair_is_one_line(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, lines = cli(capsys, "repair", "--data-dir", str(data_dir))
    assert status == 2 and len(lines) == 1 and "nothing to repair" in lines[0]


def test_repair_in_the_api_reports_what_it_recovered(data_dir: Path) -> None:
    everything = held_ids(data_dir)
    topic_files(data_dir)[-1].unlink()
    report = repair_data_dir(
        data_dir, lambda: TopicMemory(data_dir=data_dir, budget_tokens=int(BUDGET)), [THREAD]
    )
    assert report.ok and report.database == "healthy"
    (thread,) = report.threads
    assert thread.recovered == len(everything) and not thread.gone
    assert thread.from_checkpoints > 0
    assert held_ids(data_dir) == everything


@pytest.mark.parametrize("damage", ["deleted", "emptied"])
def test_a_lost_topic_file_costs_warning_lines_then_repair_restores_it(
    data_dir: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    everything = held_ids(data_dir)
    biggest = max(topic_files(data_dir), key=lambda path: path.stat().st_size)
    if damage == "deleted":
        biggest.unlink()
    else:
        biggest.write_bytes(b"")
    for command in ("import", "chat", "context", "transcript", "topics"):
        status, _, lines = cli(capsys, *command_args(command, data_dir), stdin="ROE?\n")
        assert status == 0, (command, lines)
        assert not any("Traceback" in line or ": error: " in line for line in lines), lines
    status, out, _ = cli(capsys, *command_args("check", data_dir))
    assert status == 1 and "langgraph-topics repair" in out
    status, out, lines = cli(capsys, "repair", *command_args("x", data_dir)[1:])
    assert status == 0, (out, lines)
    status, out, lines = cli(capsys, *command_args("check", data_dir))
    assert status == 0, (out, lines)
    assert set(everything) <= set(held_ids(data_dir))


def test_repair_reads_every_checkpoint_outside_the_damaged_pages(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = data_dir / "checkpoints.sqlite"
    with closing(sqlite3.connect(database)) as connection:  # every row into the main file
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = database.stat().st_size
    with database.open("r+b") as handle:
        handle.seek(size // 2)
        handle.write(b"\xab" * min(30_000, size // 3))
    status, _, lines = cli(capsys, *command_args("check", data_dir))
    assert status == 2 and "damaged" in lines[0]
    status, out, lines = cli(capsys, "repair", "--data-dir", str(data_dir), "--budget", BUDGET)
    assert status in (0, 1), (out, lines)
    assert "from readable checkpoints" in out
    if status == 1:
        assert "unreadable" in out or "gone" in out
    status, out, lines = cli(capsys, *command_args("check", data_dir))
    assert status == 0, (out, lines)


def test_repair_refuses_a_thread_a_running_chat_holds(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from langgraph_topics.cli.pending_line import ChatSession, pending_directory

    topic_files(data_dir)[0].unlink()
    with ChatSession(pending_directory(data_dir, THREAD)) as session:  # a chat still running
        session.write("a line being answered")
        session.clear()  # answered; the session goes on
        status, out, lines = cli(capsys, "repair", *command_args("x", data_dir)[1:])
    assert status == 3, (out, lines)
    assert len(lines) == 1 and "in use" in lines[0] and "nothing was changed" in lines[0]
    assert not list(data_dir.glob("repair-*"))  # nothing set aside
    status, out, lines = cli(capsys, "repair", *command_args("x", data_dir)[1:])
    assert status == 0, (out, lines)  # once the chat has ended
