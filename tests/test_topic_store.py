"""What only the JSONL topic store does: its files, torn and damaged lines, its cache.

The behaviour every topic store shares is checked on this one too, in ``test_base_store_topics``.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from pathlib import Path

import pytest

from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores import JsonlTopicStore, open_sqlite_checkpointer


def msg(message_id: str, content: str = "hello", **extra: object) -> StoredMessage:
    message: dict[str, object] = {"id": message_id, "role": "user", "content": content}
    message.update(extra)
    return message  # type: ignore[return-value]


def test_each_topic_is_an_append_only_file(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    meta = store.create_topic("Stocks", "valuation talk")
    assert store.file_path(meta["id"]) == tmp_path / meta["file"]
    assert store.file_path(meta["id"]).exists()
    store.append(meta["id"], [msg("m1", "first"), msg("m2", "second", role="assistant")])
    store.append(meta["id"], [msg("m3", "third")])
    store.set_brief(meta["id"], "Stock valuation", "P/E, DCF and friends")

    # Every record is a line, the brief update came last.
    lines = store.file_path(meta["id"]).read_text("utf-8").splitlines()
    assert [json.loads(line)["type"] for line in lines] == [
        "topic",
        "message",
        "message",
        "message",
        "brief",
    ]


def test_rejected_calls_leave_the_files_as_they_were(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    with pytest.raises(KeyError):
        store.create_topic("child", "", parent_id="topic-00000000")
    with pytest.raises(ValueError):
        store.create_topic("t", "", created_at="yesterday")
    assert list((tmp_path / "topics").iterdir()) == []

    first = store.create_topic("one", "")
    second = store.create_topic("two", "")
    store.append(first["id"], [msg("m1"), msg("m2")])
    before = {path: path.read_bytes() for path in (tmp_path / "topics").iterdir()}
    with pytest.raises(ValueError, match="already stored"):
        store.append(second["id"], [msg("m3"), msg("m1")])
    with pytest.raises(TypeError):
        store.append(second["id"], [msg("m6", tool_calls=[{"args": object()}])])
    assert {path: path.read_bytes() for path in (tmp_path / "topics").iterdir()} == before


def test_torn_last_line_recovers(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("t", "brief")
    store.append(topic["id"], [msg("m1", "one"), msg("m2", "two")])
    path = store.file_path(topic["id"])
    intact = path.read_bytes()
    # A crash halfway through the next append: half a line, no newline.
    with path.open("ab") as handle:
        handle.write(b'{"type": "message", "seq": 9, "id": "m3", "role": "user", "cont')

    with caplog.at_level(logging.WARNING):
        reopened = JsonlTopicStore(tmp_path)
    assert "torn" in caplog.text
    assert [m["id"] for m in reopened.messages(topic["id"])] == ["m1", "m2"]
    assert path.read_bytes() == intact
    assert reopened.locate("m3") is None

    reopened.append(topic["id"], [msg("m3", "three")])
    again = JsonlTopicStore(tmp_path)
    assert [m["content"] for m in again.messages(topic["id"])] == ["one", "two", "three"]
    assert again.meta(topic["id"])["message_count"] == 3


def test_zero_filled_tail_is_dropped(tmp_path: Path) -> None:
    # Some filesystems leave NULs where a write's data never reached the disk.
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("t", "")
    store.append(topic["id"], [msg("m1")])
    with store.file_path(topic["id"]).open("ab") as handle:
        handle.write(b"\x00" * 40)
    reopened = JsonlTopicStore(tmp_path)
    reopened.append(topic["id"], [msg("m2")])
    assert [m["id"] for m in JsonlTopicStore(tmp_path).messages(topic["id"])] == ["m1", "m2"]


def test_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("t", "")
    store.append(topic["id"], [msg("m1")])
    path = store.file_path(topic["id"])
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    reopened = JsonlTopicStore(tmp_path)
    assert reopened.locate("m1") == topic["id"]
    reopened.append(topic["id"], [msg("m2")])
    assert [m["id"] for m in JsonlTopicStore(tmp_path).messages(topic["id"])] == ["m1", "m2"]


def test_damaged_middle_line_is_skipped_not_deleted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("t", "")
    store.append(topic["id"], [msg("m1")])
    path = store.file_path(topic["id"])
    with path.open("ab") as handle:
        handle.write(b"this is not json\n")
    store.append(topic["id"], [msg("m2")])
    size = path.stat().st_size

    with caplog.at_level(logging.WARNING):
        reopened = JsonlTopicStore(tmp_path)
    assert "unreadable line 3" in caplog.text
    assert path.stat().st_size == size
    assert [m["id"] for m in reopened.messages(topic["id"])] == ["m1", "m2"]


def test_torn_header_leaves_no_topic(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    kept = store.create_topic("kept", "")
    (tmp_path / "topics" / "topic-deadbeef.jsonl").write_bytes(b'{"type": "topic", "id": "to')
    reopened = JsonlTopicStore(tmp_path)
    assert reopened.topic_ids() == [kept["id"]]


def test_damaged_header_keeps_messages(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("t", "")
    store.append(topic["id"], [msg("m1"), msg("m2")])
    path = store.file_path(topic["id"])
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join([b"garbage"] + lines[1:]))
    reopened = JsonlTopicStore(tmp_path)
    assert reopened.topic_ids() == [topic["id"]]
    assert [m["id"] for m in reopened.messages(topic["id"])] == ["m1", "m2"]


def test_line_breaks_in_text_keep_one_record_per_line(tmp_path: Path) -> None:
    breaks = [
        "line one\nline two\r\nline three\rend",
        "separators \u2028 and \u2029 and \x85 and \x0b\x0c",
        '{"type": "message", "id": "fake"}\n{"type": "brief"}',
    ]
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic(breaks[0], breaks[1])
    messages = [msg(f"m{i}", text, name=text) for i, text in enumerate(breaks)]
    store.append(topic["id"], messages)
    store.set_brief(topic["id"], breaks[1], breaks[2])
    raw = store.file_path(topic["id"]).read_bytes()
    assert raw.count(b"\n") == 1 + len(messages) + 1
    assert JsonlTopicStore(tmp_path).messages(topic["id"]) == messages


def test_messages_are_shared_with_the_cache_not_copied(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("t", "")
    store.append(topic["id"], [msg("m1", "original")])
    # Read-only by contract: copying every message of every active topic on every turn was
    # what made a turn grow with history.
    assert store.messages(topic["id"])[0] is store.messages(topic["id"])[0]


def test_cache_follows_appends(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("t", "")
    store.append(topic["id"], [msg("m1")])
    reopened = JsonlTopicStore(tmp_path)
    assert len(reopened.messages(topic["id"])) == 1  # cache loaded from the file
    reopened.append(topic["id"], [msg("m2")])
    assert [m["id"] for m in reopened.messages(topic["id"])] == ["m1", "m2"]
    assert reopened.get_messages(["m2"])["m2"]["id"] == "m2"


def test_links_are_written_once_to_links_jsonl(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    parent = store.create_topic("parent", "")
    child = store.create_topic("child", "", parent_id=parent["id"])
    other = store.create_topic("other", "")
    store.link(parent["id"], child["id"], "subtopic")
    store.link(child["id"], other["id"], "related")
    store.link(parent["id"], child["id"], "subtopic")
    assert len((tmp_path / "links.jsonl").read_text("utf-8").splitlines()) == 2


def test_concurrent_appends_and_reads(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    topics = [store.create_topic(f"t{i}", "")["id"] for i in range(4)]
    errors: list[BaseException] = []

    def worker(index: int) -> None:
        try:
            for n in range(50):
                store.append(topics[index], [msg(f"{index}-{n}")])
                store.messages(topics[(index + 1) % 4])
                store.get_messages([f"{(index + 1) % 4}-{n}"])
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    reopened = JsonlTopicStore(tmp_path)
    for index, topic_id in enumerate(topics):
        ids = [m["id"] for m in reopened.messages(topic_id)]
        assert ids == [f"{index}-{n}" for n in range(50)]
    assert len(reopened.message_ids()) == 200


def test_sqlite_checkpointer(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "checkpoints.sqlite"
    saver = open_sqlite_checkpointer(path)
    try:
        assert path.exists()
        mode = saver.conn.execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"

        from typing import TypedDict

        from langchain_core.runnables import RunnableConfig
        from langgraph.graph import END, START, StateGraph

        class State(TypedDict):
            count: int

        graph = StateGraph(State)
        graph.add_node("inc", lambda state: {"count": state["count"] + 1})
        graph.add_edge(START, "inc")
        graph.add_edge("inc", END)
        app = graph.compile(checkpointer=saver)
        config: RunnableConfig = {"configurable": {"thread_id": "t1"}}
        assert app.invoke(State(count=1), config)["count"] == 2

        # The connection is usable from another thread (graph nodes run in a pool).
        results: list[int] = []
        thread = threading.Thread(
            target=lambda: results.append(app.get_state(config).values["count"])
        )
        thread.start()
        thread.join()
        assert results == [2]
    finally:
        saver.conn.close()

    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] > 0
