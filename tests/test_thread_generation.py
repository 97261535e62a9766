"""The generation marker: other processes' writes are never missed, and reads cost no re-open.

Two memories on one data directory stand for two processes (each has its own locks and cached
stores); where a process must die in the middle of a hold, a real one is killed.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from langgraph_topics import TopicMemory
from langgraph_topics.bench.fakes import HashEmbedder, fake_roles
from langgraph_topics.bench.synthetic import seed_thread
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.thread_generation import (
    MARKER_FILE,
    begin_hold,
    end_hold,
    note_write,
    read_token,
)
from langgraph_topics.thread_locks import thread_directory


def _memory(data_dir: Path) -> TopicMemory:
    return TopicMemory(
        data_dir=data_dir, budget_tokens=4000, roles=fake_roles(), embedder=HashEmbedder(64)
    )


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[TopicMemory]:
    """A memory whose thread ``t`` holds 60 messages in 3 topics, its stores cached."""
    memory = _memory(tmp_path / "d")
    seed_thread(memory, "t", history=60, topics=3, active=3)
    memory.chat("t", "hello there")
    yield memory
    memory.close()


def _forgets(memory: TopicMemory, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the threads whose cached stores ``memory`` drops from now on."""
    dropped: list[str] = []
    forget = memory.services.forget_stores

    def spy(thread_id: str) -> None:
        dropped.append(thread_id)
        forget(thread_id)

    monkeypatch.setattr(memory.services, "forget_stores", spy)
    return dropped


def _message(message_id: str) -> StoredMessage:
    return {
        "id": message_id,
        "role": "user",
        "content": "one more line",
        "timestamp": "2024-06-01T00:00:00+00:00",
    }


_KILLED_AFTER_WRITING = """
import os, signal, sys
from langgraph_topics import TopicMemory
from langgraph_topics.bench.fakes import HashEmbedder, fake_roles
memory = TopicMemory(
    data_dir=sys.argv[1], budget_tokens=4000, roles=fake_roles(), embedder=HashEmbedder(64)
)
with memory.reading("t"):
    store = memory.services.stores("t").topic_store
    message = {"id": "late", "role": "user", "content": "written, then killed",
               "timestamp": "2024-06-01T00:00:00+00:00"}
    store.append(store.topic_ids()[0], [message])
    os.kill(os.getpid(), signal.SIGKILL)  # the lock is let go by the kernel, no bump after
"""


def test_a_process_killed_after_its_write_still_makes_the_others_reopen(
    seeded: TopicMemory, tmp_path: Path
) -> None:
    with seeded.reading("t"):
        assert "late" not in seeded.services.stores("t").topic_store.message_ids()
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_AFTER_WRITING, str(tmp_path / "d")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == -9, done.stderr[-2000:]
    with seeded.reading("t"):
        assert "late" in seeded.services.stores("t").topic_store.message_ids()
    assert seeded.check("t").ok


def test_holds_that_write_no_store_leave_the_other_processes_stores_alone(
    seeded: TopicMemory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = _memory(tmp_path / "d")
    try:
        dropped = _forgets(seeded, monkeypatch)
        other.context("t", "what about the garden?")  # opens the stores, writes none
        other.topics("t")
        seeded.context("t", "and the piano lesson?")
        assert dropped == []
        other.chat("t", "the marathon is next week")  # no split: no store is written
        with seeded.reading("t"):
            pass
        assert dropped == []
        with other.reading("t"):
            store = other.services.stores("t").topic_store
            store.append(store.topic_ids()[0], [_message("extra")])
        with seeded.reading("t"):
            assert "extra" in seeded.services.stores("t").topic_store.message_ids()
        assert dropped == ["t"]
    finally:
        other.close()


def test_an_empty_or_missing_marker_counts_as_changed_and_is_written_anew(
    seeded: TopicMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = thread_directory(seeded.settings.data_dir, "t") / MARKER_FILE
    dropped = _forgets(seeded, monkeypatch)
    marker.write_bytes(b"")  # a process killed while writing it
    with seeded.reading("t"):
        pass
    assert dropped == ["t"] and read_token(marker.parent) is not None
    marker.unlink()
    with seeded.reading("t"):
        pass
    with seeded.reading("t"):
        pass
    assert dropped == ["t", "t"] and marker.is_file()


def test_one_hold_replaces_the_marker_once_before_its_first_write(tmp_path: Path) -> None:
    directory = tmp_path / "threads" / "t-x"
    (directory / "topics").mkdir(parents=True)
    begin_hold(directory)  # writes the first marker
    first = end_hold(directory)
    assert first is not None and read_token(directory) == first
    assert begin_hold(directory) == first
    note_write(directory / "topics" / "a.jsonl")
    bumped = read_token(directory)
    note_write(directory / "links.jsonl")
    assert bumped not in (None, first) and read_token(directory) == bumped
    assert end_hold(directory) == bumped


def test_a_write_outside_any_hold_replaces_the_marker_every_time(tmp_path: Path) -> None:
    directory = tmp_path / "threads" / "t-y"
    (directory / "topics" / "archived" / "2024-06").mkdir(parents=True)
    begin_hold(directory)
    end_hold(directory)
    seen = {read_token(directory)}
    for _ in range(2):
        note_write(directory / "topics" / "archived" / "2024-06" / "topic-1.json")
        seen.add(read_token(directory))
    assert len(seen) == 3 and None not in seen


def test_a_write_under_no_thread_directory_leaves_no_marker(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    note_write(tmp_path / "a" / "b" / "file.json")
    assert not list(tmp_path.rglob(MARKER_FILE))
