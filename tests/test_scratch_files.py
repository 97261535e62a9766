"""Scratch files of whole-file replacements: none left by a failed write, a killed one's swept."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import MemoryFactory
from conversations import subject_records

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.services import thread_directory
from langgraph_topics.stores import durable, scratch_files
from langgraph_topics.stores.scratch_files import (
    abandoned_scratch,
    remove_abandoned_scratch,
    scratch_path,
    writer_pid,
)


def _aged(path: Path, seconds: float = 600.0) -> Path:
    moment = time.time() - seconds
    os.utime(path, (moment, moment))
    return path


def _gone_pid() -> int:
    """The id of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _killed_mid_replace(target: Path) -> Path:
    """Kill -9 a process between writing ``target``'s scratch file and renaming it."""
    script = textwrap.dedent(f"""
        import os, time
        from pathlib import Path
        from langgraph_topics.stores import durable

        def stalled(source, destination):
            print("written", flush=True)
            time.sleep(60)

        durable.os.replace = stalled
        durable.replace_durably(Path({str(target)!r}), b"new content" * 1000)
    """)
    process = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.strip() == "written", process.stderr.read() if process.stderr else ""
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    left = target.with_name(f".{target.name}.{process.pid}.tmp")
    assert left.is_file(), sorted(p.name for p in target.parent.iterdir())
    return left


def test_a_failed_replacement_keeps_the_file_and_leaves_no_scratch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "catalog.json"
    target.write_bytes(b"old")

    def full_disk(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(durable.os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        durable.replace_durably(target, b"new")
    monkeypatch.undo()
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["catalog.json"]


def test_a_killed_replacement_leaves_the_old_file_and_its_scratch_is_swept(
    tmp_path: Path,
) -> None:
    target = tmp_path / "topics" / "t1.decoded"
    target.parent.mkdir()
    target.write_bytes(b"old")
    left = _killed_mid_replace(target)
    assert target.read_bytes() == b"old"

    # Fresh: a writer elsewhere could still be between its two steps.
    assert remove_abandoned_scratch(tmp_path) == 0
    assert left.is_file()
    _aged(left)
    assert abandoned_scratch(tmp_path) == [left]
    assert remove_abandoned_scratch(tmp_path) == 1
    assert not left.exists()
    assert target.read_bytes() == b"old"


def test_only_scratch_files_of_gone_writers_are_taken(tmp_path: Path) -> None:
    gone = _gone_pid()
    taken = tmp_path / f".entries.decoded.{gone}.tmp"
    taken.write_bytes(b"x")
    _aged(taken)
    nested = tmp_path / "retrieval" / f".meta.json.{gone}.tmp"
    nested.parent.mkdir()
    nested.write_bytes(b"x")
    _aged(nested)
    kept = {
        # This process, and a running one, may be writing them.
        scratch_path(tmp_path / "mine.json"),
        tmp_path / f".parent.json.{os.getppid()}.tmp",
        # Not the name replace_durably gives.
        tmp_path / ".hidden.tmp",
        tmp_path / f"visible.{gone}.tmp",
        tmp_path / f".no-pid.{gone}x.tmp",
        # No process could have it: unsure counts as running.
        tmp_path / f".huge-pid.{10**30}.tmp",
    }
    for path in kept:
        path.write_bytes(b"x")
        _aged(path)
    directory = tmp_path / f".looks-like.{gone}.tmp"
    directory.mkdir()
    _aged(directory)

    assert sorted(abandoned_scratch(tmp_path)) == sorted([taken, nested])
    assert remove_abandoned_scratch(tmp_path) == 2
    assert all(path.is_file() for path in kept) and directory.is_dir()
    assert remove_abandoned_scratch(tmp_path / "missing") == 0


def test_the_scratch_name_carries_the_writer_pid(tmp_path: Path) -> None:
    assert writer_pid(scratch_path(tmp_path / "a.b.json")) == os.getpid()
    assert writer_pid(tmp_path / "a.json") is None
    assert scratch_files.process_exists(os.getpid())


def test_opening_a_thread_sweeps_what_a_killed_writer_left(make_memory: MemoryFactory) -> None:
    memory = make_memory(budget=600)
    memory.import_messages("t", subject_records(["stocks", "kyoto", "sourdough", "fitness"]))
    before = memory.check("t")
    assert before.ok, before.findings
    data_dir = Path(memory.services.settings.data_dir)
    memory.close()

    root = thread_directory(data_dir, "t")
    gone = _gone_pid()
    topic_file = next((root / "topics").glob("*.jsonl"))
    left = [
        root / "retrieval" / f".entries.decoded.{gone}.tmp",
        topic_file.with_name(f".{topic_file.name}.{gone}.tmp"),
    ]
    for path in left:
        path.write_bytes(b"partial" * 100)
        _aged(path)

    with TopicMemory(settings=Settings(data_dir=data_dir, budget_tokens=600)) as reopened:
        after = reopened.check("t")
        assert after.ok, after.findings
        assert after.counts == before.counts
        assert not any(path.exists() for path in left)
        reopened.chat("t", "What did I plan in Kyoto?")
        assert reopened.check("t").ok
