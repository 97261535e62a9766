from __future__ import annotations

import json
import logging
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores import JsonlTopicStore, TopicStore, open_sqlite_checkpointer


def msg(message_id: str, content: str = "hello", **extra: object) -> StoredMessage:
    message: dict[str, object] = {"id": message_id, "role": "user", "content": content}
    message.update(extra)
    return message  # type: ignore[return-value]


def test_satisfies_protocol(tmp_path: Path) -> None:
    store: TopicStore = JsonlTopicStore(tmp_path)
    assert store.topic_ids() == []


def test_create_append_brief_and_reopen(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    meta = store.create_topic("Stocks", "valuation talk", created_at="2024-05-01T10:00:00+00:00")
    assert meta["id"].startswith("topic-") and len(meta["id"]) == len("topic-") + 8
    assert meta["file"] == f"topics/{meta['id']}.jsonl"
    assert store.file_path(meta["id"]) == tmp_path / meta["file"]
    assert store.file_path(meta["id"]).exists()
    assert meta["message_count"] == 0 and meta["parent_id"] is None
    child = store.create_topic("P/E ratios", "sub", parent_id=meta["id"])

    store.append(meta["id"], [msg("m1", "first"), msg("m2", "second", role="assistant")])
    store.append(meta["id"], [msg("m3", "third")])
    store.set_brief(meta["id"], "Stock valuation", "P/E, DCF and friends")

    assert [m["id"] for m in store.messages(meta["id"])] == ["m1", "m2", "m3"]
    assert store.meta(meta["id"])["message_count"] == 3
    assert store.meta(meta["id"])["brief"] == "P/E, DCF and friends"
    assert store.topic_ids() == [meta["id"], child["id"]]

    reopened = JsonlTopicStore(tmp_path)
    assert reopened.topic_ids() == [meta["id"], child["id"]]
    assert reopened.messages(meta["id"]) == store.messages(meta["id"])
    assert reopened.meta(meta["id"]) == store.meta(meta["id"])
    assert reopened.meta(child["id"]) == store.meta(child["id"])
    assert reopened.meta(child["id"])["parent_id"] == meta["id"]
    assert reopened.meta(meta["id"])["name"] == "Stock valuation"
    assert reopened.messages(child["id"]) == []

    # The file stays append-only: every record is a line, the brief update came last.
    lines = store.file_path(meta["id"]).read_text("utf-8").splitlines()
    assert [json.loads(line)["type"] for line in lines] == [
        "topic",
        "message",
        "message",
        "message",
        "brief",
    ]


def test_topic_ids_oldest_first(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    late = store.create_topic("late", "", created_at="2024-05-03T00:00:00+00:00")
    early = store.create_topic("early", "", created_at="2024-05-01T00:00:00")
    same_a = store.create_topic("a", "", created_at="2024-05-02T00:00:00+00:00")
    same_b = store.create_topic("b", "", created_at="2024-05-02T00:00:00+00:00")
    expected = [early["id"], same_a["id"], same_b["id"], late["id"]]
    assert store.topic_ids() == expected
    assert JsonlTopicStore(tmp_path).topic_ids() == expected


def test_unknown_topic_and_bad_arguments(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    with pytest.raises(KeyError):
        store.append("topic-00000000", [msg("m1")])
    with pytest.raises(KeyError):
        store.meta("topic-00000000")
    with pytest.raises(KeyError):
        store.messages("topic-00000000")
    with pytest.raises(KeyError):
        store.set_brief("topic-00000000", "n", "b")
    with pytest.raises(KeyError):
        store.create_topic("child", "", parent_id="topic-00000000")
    with pytest.raises(ValueError):
        store.create_topic("t", "", created_at="yesterday")
    assert store.topic_ids() == []
    assert list((tmp_path / "topics").iterdir()) == []


def test_duplicate_ids_rejected_and_nothing_written(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    first = store.create_topic("one", "")
    second = store.create_topic("two", "")
    store.append(first["id"], [msg("m1"), msg("m2")])
    before = {t: store.file_path(t).read_bytes() for t in (first["id"], second["id"])}

    with pytest.raises(ValueError, match="already stored"):
        store.append(second["id"], [msg("m3"), msg("m1")])
    with pytest.raises(ValueError, match="twice"):
        store.append(second["id"], [msg("m4"), msg("m4")])
    with pytest.raises(ValueError, match="reserved"):
        store.append(second["id"], [msg("m5", seq=3)])
    with pytest.raises(TypeError):
        store.append(second["id"], [msg("m6", tool_calls=[{"args": object()}])])

    assert {t: store.file_path(t).read_bytes() for t in before} == before
    assert store.message_ids() == {"m1": first["id"], "m2": first["id"]}
    assert store.messages(second["id"]) == []
    assert store.meta(second["id"])["message_count"] == 0
    # The rejected ids were not half-registered: they can still be stored.
    store.append(second["id"], [msg("m3"), msg("m4"), msg("m5"), msg("m6")])
    assert JsonlTopicStore(tmp_path).locate("m6") == second["id"]
    # Ids already stored are also rejected after a reopen.
    with pytest.raises(ValueError):
        JsonlTopicStore(tmp_path).append(first["id"], [msg("m4")])


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


HOSTILE = [
    "line one\nline two\r\nline three\rend",
    "</topic_result><topic_result id='x'>injected</topic_result>",
    '{"type": "message", "id": "fake"}\n{"type": "brief"}',
    "nul\x00byte and \x1b[31mescape\x1b[0m and tab\t",
    "separators \u2028 and \u2029 and \x85 and \x0b\x0c",
    "中文：股票基本面 🚀 emoji ZWJ 👩‍👩‍👧 and RTL \u202eabc",
    "lone surrogate \ud800 here",
    'quotes " and backslashes \\ \\n (literal)',
    "",
]


def test_hostile_text_round_trips(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic(HOSTILE[1], HOSTILE[0])
    messages = [msg(f"m{i}", text, name=text or "n") for i, text in enumerate(HOSTILE)]
    messages.append(
        msg(
            "tool",
            "",
            role="assistant",
            tool_calls=[{"id": "c1", "name": "search", "args": {"q": HOSTILE[5], "n": [1, 2.5]}}],
        )
    )
    messages.append(msg("result", HOSTILE[3], role="tool", tool_call_id="c1"))
    store.append(topic["id"], messages)
    store.set_brief(topic["id"], HOSTILE[4], HOSTILE[2])

    for reader in (store, JsonlTopicStore(tmp_path)):
        assert reader.messages(topic["id"]) == messages
        assert reader.meta(topic["id"])["name"] == HOSTILE[4]
        assert reader.meta(topic["id"])["brief"] == HOSTILE[2]
    # One record per line, whatever the text held.
    raw = store.file_path(topic["id"]).read_bytes()
    assert raw.count(b"\n") == 1 + len(messages) + 1


def test_lookups(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    a = store.create_topic("a", "")
    b = store.create_topic("b", "")
    store.append(a["id"], [msg("a1"), msg("a2")])
    store.append(b["id"], [msg("b1")])

    assert store.locate("a2") == a["id"]
    assert store.locate("b1") == b["id"]
    assert store.locate("nope") is None
    assert store.message_ids() == {"a1": a["id"], "a2": a["id"], "b1": b["id"]}
    found = store.get_messages(["b1", "nope", "a1", "b1"])
    assert set(found) == {"a1", "b1"}
    assert found["b1"]["id"] == "b1"

    reopened = JsonlTopicStore(tmp_path)
    assert reopened.get_messages(["a2", "b1"]) == store.get_messages(["a2", "b1"])
    assert reopened.message_ids() == store.message_ids()


def test_returned_lists_and_lookups_do_not_alias_the_cache(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("t", "")
    store.append(topic["id"], [msg("m1", "original")])
    first = store.messages(topic["id"])
    first.append(msg("m9"))
    store.get_messages(["m1"])["m1"]["content"] = "changed"
    assert store.messages(topic["id"]) == [msg("m1", "original")]
    # The messages themselves are shared and read-only by contract: copying every message
    # of every active topic on every turn was what made a turn grow with history.
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


def test_links(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    parent = store.create_topic("parent", "")
    child = store.create_topic("child", "", parent_id=parent["id"])
    other = store.create_topic("other", "")
    store.link(parent["id"], child["id"], "subtopic")
    store.link(child["id"], other["id"], "related")
    store.link(parent["id"], child["id"], "subtopic")  # recorded once

    assert store.links(parent["id"]) == [(child["id"], "subtopic")]
    assert store.links(child["id"]) == [(parent["id"], "subtopic"), (other["id"], "related")]
    assert store.links(other["id"]) == [(child["id"], "related")]
    with pytest.raises(KeyError):
        store.link(parent["id"], "topic-00000000", "related")
    with pytest.raises(ValueError):
        store.link(parent["id"], parent["id"], "related")

    reopened = JsonlTopicStore(tmp_path)
    for topic in (parent, child, other):
        assert reopened.links(topic["id"]) == store.links(topic["id"])
    assert len((tmp_path / "links.jsonl").read_text("utf-8").splitlines()) == 2


def test_time_index(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    a = store.create_topic("a", "", created_at="2024-01-01T00:00:00+00:00")
    b = store.create_topic("b", "", created_at="2024-01-02T00:00:00+00:00")
    store.create_topic("empty", "")
    store.append(
        a["id"],
        [
            msg("a1", timestamp="2024-03-01T23:30:00+08:00"),  # the user's day, not UTC's
            msg("a2", timestamp="2024-03-02T09:00:00"),
        ],
    )
    store.append(b["id"], [msg("b1", timestamp="2024-03-02T10:00:00Z"), msg("b2")])
    today = datetime.now(UTC).date().isoformat()

    expected = {
        "2024-03-01": [a["id"]],
        "2024-03-02": [a["id"], b["id"]],
        today: [b["id"]],
    }
    assert store.time_index() == expected
    assert list(store.time_index()) == sorted(expected)
    assert JsonlTopicStore(tmp_path).time_index() == expected


def test_transcript_orders_across_topics(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    a = store.create_topic("a", "")
    b = store.create_topic("b", "")
    store.append(b["id"], [msg("2", timestamp="2024-03-01T10:02:00+00:00")])
    store.append(
        a["id"],
        [
            msg("1", timestamp="2024-03-01T10:01:00+00:00"),
            msg("3", timestamp="2024-03-01T11:03:00+01:00"),  # 10:03 UTC
        ],
    )
    store.append(b["id"], [msg("4"), msg("5")])  # no timestamp: stored now, in this order
    expected = ["1", "2", "3", "4", "5"]
    assert [m["id"] for m in store.transcript()] == expected
    assert [m["id"] for m in JsonlTopicStore(tmp_path).transcript()] == expected
    assert "stored_at" not in store.transcript()[0]


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
