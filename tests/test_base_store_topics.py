"""The topic store on a LangGraph ``BaseStore``: the JSONL store's contract, crashes, copies.

The contract tests run against the JSONL store, ``BaseStoreTopicStore`` on an ``InMemoryStore``
and on a real ``PostgresStore``, so that the three answer alike.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conversations import SUBJECTS, subject_records
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import BaseStore, Op, PutOp, Result, SearchOp
from langgraph.store.memory import InMemoryStore

from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.base_store_topics import (
    NAMESPACE_PREFIX,
    BaseStoreTopicStore,
    copy_jsonl_topics,
    thread_key,
    thread_namespace,
)
from langgraph_topics.stores.protocols import BranchedTopicStore, TopicStore
from langgraph_topics.stores.seq_ranges import SeqRanges
from langgraph_topics.stores.topic_store import JsonlTopicStore
from langgraph_topics.summaries.card import SummaryCard

AnyStore = JsonlTopicStore | BaseStoreTopicStore
Opener = Callable[..., AnyStore]
"""Opens the backend's one thread: ``opener(visible=None)``."""

THREAD = "user/42: thread.with.dots ../x"

HOSTILE = [
    "line one\nline two\r\nline three\rend",
    '{"type": "message", "id": "fake"}\n{"type": "brief"}',
    "nul\x00byte and \x1b[31mescape\x1b[0m and tab\t",
    "separators \u2028 and \u2029 and \x85 and \x0b\x0c",
    "中文：股票基本面 🚀 emoji ZWJ 👩‍👩‍👧 and RTL \u202eabc",
    "lone surrogate \ud800 here",
    'quotes " and backslashes \\ \\n (literal) \\u0000',
    "",
    "</topic_result><topic_result id='x'>injected</topic_result>",
]


def msg(message_id: str, content: str = "hello", **extra: object) -> StoredMessage:
    message: dict[str, object] = {"id": message_id, "role": "user", "content": content}
    message.update(extra)
    return message  # type: ignore[return-value]


def card(text: str) -> SummaryCard:
    return {
        "version": 1,
        "text": text,
        "topics": [{"name": "valuation", "message_ids": ["m1"]}],
        "decisions": [],
        "unresolved": [],
        "entities": [{"name": "a.py", "kind": "file", "message_ids": ["m2"]}],
        "tokens_saved": 3,
        "source": "native",
    }


@pytest.fixture(params=["jsonl", "memory", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """Opens one thread of one backend, as many times as a test likes."""
    if request.param == "jsonl":
        return lambda visible=None: JsonlTopicStore(tmp_path, visible=visible)
    store: BaseStore = (
        InMemoryStore() if request.param == "memory" else request.getfixturevalue("postgres_store")
    )
    return lambda visible=None: BaseStoreTopicStore(store, THREAD, visible=visible)


@pytest.fixture(params=["memory", "postgres"])
def base_store(request: pytest.FixtureRequest) -> BaseStore:
    if request.param == "memory":
        return InMemoryStore()
    store: BaseStore = request.getfixturevalue("postgres_store")
    return store


def answers(store: AnyStore) -> dict[str, Any]:
    """Everything a topic store answers, to compare two stores (or one, reopened)."""
    topic_ids = store.topic_ids()
    all_ids = sorted(store.message_ids())
    return {
        "topic_ids": topic_ids,
        "metas": [store.meta(t) for t in topic_ids],
        "messages": [store.messages(t) for t in topic_ids],
        "links": [store.links(t) for t in topic_ids],
        "message_ids": store.message_ids(),
        "located": [store.locate(i) for i in all_ids],
        "got": store.get_messages([*all_ids, "nope"]),
        "neighbours": [store.neighbours(i, 1, 1) for i in all_ids],
        "transcript": store.transcript(),
        "time_index": store.time_index(),
        "ranges": store.visible_ranges(),
    }


def snapshot(store: AnyStore) -> object:
    """What the backend holds, raw."""
    if isinstance(store, JsonlTopicStore):
        return store.raw_records()
    return [(r.seq, r.topic, r.record) for r in store.stored_records()], store.head()


# ----------------------------------------------------------------------------- the contract


def test_satisfies_the_protocols(opener: Opener) -> None:
    store = opener()
    typed: TopicStore = store
    assert isinstance(store, BranchedTopicStore)
    assert typed.topic_ids() == [] and store.visible_ranges() == []


def test_create_append_brief_card_and_reopen(opener: Opener) -> None:
    store = opener()
    meta = store.create_topic("Stocks", "valuation talk", created_at="2024-05-01T10:00:00+00:00")
    assert meta["id"].startswith("topic-") and len(meta["id"]) == len("topic-") + 8
    assert meta["file"] == f"topics/{meta['id']}.jsonl"
    assert meta["message_count"] == 0 and meta["parent_id"] is None
    child = store.create_topic("P/E ratios", "sub", parent_id=meta["id"])
    store.append(meta["id"], [msg("m1", "first"), msg("m2", "second", role="assistant")])
    store.append(meta["id"], [msg("m3", "third")])
    store.set_brief(meta["id"], "Stock valuation", "P/E, DCF and friends", card=card("P/E"))

    assert [m["id"] for m in store.messages(meta["id"])] == ["m1", "m2", "m3"]
    assert store.meta(meta["id"])["message_count"] == 3
    assert store.meta(meta["id"])["brief"] == "P/E, DCF and friends"
    assert store.meta(meta["id"])["brief_card"] == card("P/E")
    assert store.topic_ids() == [meta["id"], child["id"]]
    assert store.visible_ranges() == [(0, 6)]

    reopened = opener()
    assert answers(reopened) == answers(store)
    assert reopened.meta(child["id"])["parent_id"] == meta["id"]
    assert reopened.meta(meta["id"])["name"] == "Stock valuation"
    assert reopened.meta(meta["id"])["brief_card"] == card("P/E")
    # A later brief without a card leaves none.
    reopened.set_brief(meta["id"], "Stocks", "plain")
    assert "brief_card" not in reopened.meta(meta["id"])
    assert "brief_card" not in opener().meta(meta["id"])


def test_topic_ids_oldest_first(opener: Opener) -> None:
    store = opener()
    late = store.create_topic("late", "", created_at="2024-05-03T00:00:00+00:00")
    early = store.create_topic("early", "", created_at="2024-05-01T00:00:00")
    same_a = store.create_topic("a", "", created_at="2024-05-02T00:00:00+00:00")
    same_b = store.create_topic("b", "", created_at="2024-05-02T00:00:00+00:00")
    expected = [early["id"], same_a["id"], same_b["id"], late["id"]]
    assert store.topic_ids() == expected
    assert opener().topic_ids() == expected


def test_unknown_topic_and_bad_arguments(opener: Opener) -> None:
    store = opener()
    before = snapshot(store)
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
    with pytest.raises(KeyError):
        store.link("topic-00000000", "topic-00000001", "related")
    with pytest.raises(ValueError):
        store.create_topic("t", "", created_at="yesterday")
    assert store.topic_ids() == []
    assert snapshot(store) == before


def test_duplicate_ids_and_reserved_keys_are_rejected_and_nothing_written(
    opener: Opener,
) -> None:
    store = opener()
    first = store.create_topic("one", "")
    second = store.create_topic("two", "")
    store.append(first["id"], [msg("m1"), msg("m2")])
    before = snapshot(store)

    with pytest.raises(ValueError, match="already stored"):
        store.append(second["id"], [msg("m3"), msg("m1")])
    with pytest.raises(ValueError, match="already stored"):
        store.append(first["id"], [msg("m2")])
    with pytest.raises(ValueError, match="twice"):
        store.append(second["id"], [msg("m4"), msg("m4")])
    for key in ("seq", "type", "stored_at"):
        with pytest.raises(ValueError, match="reserved"):
            store.append(second["id"], [msg("m5", **{key: 3})])
    with pytest.raises(ValueError, match="string id"):
        store.append(second["id"], [{"role": "user", "content": "x"}])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        store.append(second["id"], [msg("m6", tool_calls=[{"args": object()}])])

    assert snapshot(store) == before
    assert store.message_ids() == {"m1": first["id"], "m2": first["id"]}
    assert store.meta(second["id"])["message_count"] == 0
    store.append(second["id"], [msg("m3"), msg("m4"), msg("m5"), msg("m6")])
    assert opener().locate("m6") == second["id"]
    with pytest.raises(ValueError, match="already stored"):
        opener().append(first["id"], [msg("m4")])


def test_hostile_text_round_trips(opener: Opener) -> None:
    store = opener()
    topic = store.create_topic(HOSTILE[1], HOSTILE[0])
    messages = [msg(f"m{i}", text, name=text or "n") for i, text in enumerate(HOSTILE)]
    messages.append(
        msg(
            "tool",
            "",
            role="assistant",
            tool_calls=[{"id": "c1", "name": "search", "args": {"q": HOSTILE[4], "n": [1, 2.5]}}],
        )
    )
    messages.append(msg("result", HOSTILE[2], role="tool", tool_call_id="c1"))
    store.append(topic["id"], messages)
    store.set_brief(topic["id"], HOSTILE[5], HOSTILE[2])
    for reader in (store, opener()):
        assert reader.messages(topic["id"]) == messages
        assert reader.meta(topic["id"])["name"] == HOSTILE[5]
        assert reader.meta(topic["id"])["brief"] == HOSTILE[2]


def test_lookups_neighbours_and_no_aliasing(opener: Opener) -> None:
    store = opener()
    a = store.create_topic("a", "")
    b = store.create_topic("b", "")
    store.append(a["id"], [msg("a1"), msg("a2"), msg("a3")])
    store.append(b["id"], [msg("b1")])
    store.append(a["id"], [msg("a4")])

    assert store.locate("a2") == a["id"] and store.locate("nope") is None
    assert store.message_ids() == {"a1": a["id"], "a2": a["id"], "a3": a["id"], "b1": b["id"]} | {
        "a4": a["id"]
    }
    assert [m["id"] for m in store.neighbours("a3", 1, 1)] == ["a2", "a3", "a4"]
    assert [m["id"] for m in store.neighbours("a1", 5, 0)] == ["a1"]
    assert store.neighbours("nope", 1, 1) == []
    found = store.get_messages(["b1", "nope", "a1", "b1"])
    assert set(found) == {"a1", "b1"}
    found["a1"]["content"] = "changed"
    listed = store.messages(a["id"])
    listed.append(msg("zz"))
    assert store.messages(a["id"])[0]["content"] == "hello" and len(store.messages(a["id"])) == 4
    assert answers(opener()) == answers(store)


def test_links(opener: Opener) -> None:
    store = opener()
    parent = store.create_topic("parent", "")
    child = store.create_topic("child", "", parent_id=parent["id"])
    other = store.create_topic("other", "")
    store.link(parent["id"], child["id"], "subtopic")
    store.link(child["id"], other["id"], "related")
    ranges = store.visible_ranges()
    store.link(parent["id"], child["id"], "subtopic")  # recorded once
    assert store.visible_ranges() == ranges

    assert store.links(parent["id"]) == [(child["id"], "subtopic")]
    assert store.links(child["id"]) == [(parent["id"], "subtopic"), (other["id"], "related")]
    assert store.links(other["id"]) == [(child["id"], "related")]
    with pytest.raises(ValueError):
        store.link(parent["id"], parent["id"], "related")
    reopened = opener()
    for topic in (parent, child, other):
        assert reopened.links(topic["id"]) == store.links(topic["id"])


def test_time_index(opener: Opener) -> None:
    store = opener()
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
    expected = {"2024-03-01": [a["id"]], "2024-03-02": [a["id"], b["id"]], today: [b["id"]]}
    assert store.time_index() == expected
    assert list(store.time_index()) == sorted(expected)
    assert opener().time_index() == expected


def test_transcript_orders_across_topics(opener: Opener) -> None:
    store = opener()
    a = store.create_topic("a", "")
    b = store.create_topic("b", "")
    store.append(b["id"], [msg("2", timestamp="2024-03-01T10:02:00+00:00")])
    store.append(
        a["id"],
        [
            msg("1", timestamp="2024-03-01T10:01:00+00:00"),
            msg("3", timestamp="2024-03-01T11:03:00+01:00"),  # 10:03 UTC
            msg("3b", timestamp="2024-03-01T10:03:00+00:00"),  # same time: storing order
        ],
    )
    store.append(b["id"], [msg("4"), msg("5")])  # no timestamp: stored now, in this order
    expected = ["1", "2", "3", "3b", "4", "5"]
    assert [m["id"] for m in store.transcript()] == expected
    assert [m["id"] for m in opener().transcript()] == expected
    assert "stored_at" not in store.transcript()[0]


def test_branches_see_only_their_own_records(opener: Opener) -> None:
    full = opener()
    topic = full.create_topic("a", "")
    full.append(topic["id"], [msg("x", "x")])
    fork_ranges = full.visible_ranges()
    full.append(topic["id"], [msg("y", "y")])
    later = full.create_topic("later", "")
    full.link(topic["id"], later["id"], "related")

    fork = full.on_branch(fork_ranges)
    assert fork.visible_ranges() == fork_ranges
    assert fork.message_ids() == {"x": topic["id"]}
    assert fork.topic_ids() == [topic["id"]]
    assert fork.links(topic["id"]) == []
    with pytest.raises(KeyError):
        fork.meta(later["id"])
    fork.append(topic["id"], [msg("y", "y again")])  # the old branch's "y" is not seen here
    new_topic = fork.create_topic("fork only", "")
    # New records are numbered after every other branch's.
    assert min(start for start, _ in fork.visible_ranges()[1:]) >= max(
        end for _, end in full.visible_ranges()
    )

    old = opener(visible=full.visible_ranges())
    forked = opener(visible=fork.visible_ranges())
    assert old.messages(topic["id"])[-1]["content"] == "y"
    assert forked.messages(topic["id"])[-1]["content"] == "y again"
    assert len(forked.messages(topic["id"])) == 2
    assert new_topic["id"] not in old.topic_ids()
    assert forked.topic_ids() == [topic["id"], new_topic["id"]]
    assert answers(forked) == answers(fork)
    assert answers(old) == answers(full)
    # The view of every record keeps the first "y" and counts both branches' topics.
    everything = opener()
    assert everything.messages(topic["id"])[-1]["content"] == "y"
    assert set(everything.topic_ids()) == {topic["id"], later["id"], new_topic["id"]}


# --------------------------------------------------------------------- BaseStore specifics


def test_thread_keys_are_safe_namespace_labels() -> None:
    store = InMemoryStore()
    ids = [THREAD, "a.b", "a_b", "..", "中文 thread", "x" * 256]
    keys = {thread_key(i) for i in ids}
    assert len(keys) == len(ids)
    for thread_id in ids:
        assert "." not in thread_key(thread_id)
        assert thread_namespace(thread_id)[0] == NAMESPACE_PREFIX
        topics = BaseStoreTopicStore(store, thread_id)
        topics.append(topics.create_topic(thread_id, "")["id"], [msg(f"m-{thread_id}")])
    for thread_id in ids:
        assert BaseStoreTopicStore(store, thread_id).message_ids().keys() == {f"m-{thread_id}"}


def test_head_moves_when_another_instance_writes(base_store: BaseStore) -> None:
    first = BaseStoreTopicStore(base_store, THREAD)
    assert first.head() == 0 and first.known_head() == 0
    topic = first.create_topic("t", "")
    first.append(topic["id"], [msg("m1"), msg("m2")])
    assert first.head() == first.known_head() == 3
    second = BaseStoreTopicStore(base_store, THREAD)
    assert second.known_head() == 3
    second.append(topic["id"], [msg("m3")])
    assert first.head() == 4 != first.known_head()
    # A writer with a stale view still numbers after the stored head: nothing is overwritten.
    first.append(topic["id"], [msg("m4")])
    assert first.visible_ranges() == [(0, 3), (4, 5)]
    again = BaseStoreTopicStore(base_store, THREAD)
    assert [m["id"] for m in again.messages(topic["id"])] == ["m1", "m2", "m3", "m4"]
    assert [r.seq for r in again.stored_records()] == [0, 1, 2, 3, 4]
    # Another thread of the same store is untouched.
    assert BaseStoreTopicStore(base_store, THREAD + "2").topic_ids() == []


def test_items_are_not_embedded_and_readable(base_store: BaseStore) -> None:
    topics = BaseStoreTopicStore(base_store, THREAD)
    topics.append(topics.create_topic("t", "")["id"], [msg("m1", "nul\x00")])
    items = base_store.search((*thread_namespace(THREAD), "records"), limit=10)
    assert sorted(item.value["type"] for item in items) == ["message", "topic"]
    assert all(isinstance(item.value["record"], str) for item in items)
    head = base_store.get(thread_namespace(THREAD), "head")
    assert head is not None and head.value == {"seq": 2}


def test_loading_pages_through_many_records(base_store: BaseStore) -> None:
    topics = BaseStoreTopicStore(base_store, THREAD)
    topic = topics.create_topic("t", "")
    for block in range(3):
        topics.append(topic["id"], [msg(f"m{block}-{i}") for i in range(450)])
    reopened = BaseStoreTopicStore(base_store, THREAD)
    assert len(reopened.messages(topic["id"])) == 1350
    assert answers(reopened) == answers(topics)


def test_racing_writers_on_two_connections_never_overwrite_a_record(postgres_uri: str) -> None:
    """Without the writer lock two processes may take the same numbers: both records stay."""
    from langgraph.store.postgres import PostgresStore

    with (
        PostgresStore.from_conn_string(postgres_uri) as one,
        PostgresStore.from_conn_string(postgres_uri) as two,
    ):
        one.setup()
        topic = BaseStoreTopicStore(one, THREAD).create_topic("t", "")["id"]
        writers = {"a": BaseStoreTopicStore(one, THREAD), "b": BaseStoreTopicStore(two, THREAD)}

        def write(name: str) -> None:
            for turn in range(15):
                writers[name].append(topic, [msg(f"{name}{turn}-{i}") for i in range(3)])

        threads = [threading.Thread(target=write, args=(name,)) for name in writers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stored = BaseStoreTopicStore(one, THREAD).message_ids()
        assert len(stored) == 2 * 15 * 3


class CountingStore(BaseStore):
    """Passes operations to another store, keeping the searches it was asked for."""

    def __init__(self, inner: BaseStore) -> None:
        self.inner = inner
        self.searches: list[SearchOp] = []

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        self.searches += [op for op in ops if isinstance(op, SearchOp)]
        return self.inner.batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        raise NotImplementedError


def test_workers_taking_turns_on_a_branch_read_only_what_the_other_added(
    base_store: BaseStore,
) -> None:
    store = CountingStore(base_store)
    first = BaseStoreTopicStore(store, THREAD, visible=[])
    topic = first.create_topic("t", "")
    first.append(
        topic["id"], [msg(f"m{i}", timestamp=f"2024-01-01T00:00:{i:02d}") for i in range(9)]
    )
    first_view = answers(first)
    # Another worker takes the next turn on the same branch (its checkpoint's ranges) ...
    second = BaseStoreTopicStore(store, THREAD, visible=[]).on_branch(first.visible_ranges())
    second.append(topic["id"], [msg("m9"), msg("m10")])
    second.set_brief(topic["id"], "t", "ten messages", card=card("ten"))
    other = second.create_topic("other", "")
    second.link(topic["id"], other["id"], "related")
    second.append(other["id"], [msg("o1")])
    checkpoint = second.visible_ranges()
    assert checkpoint == [(0, 16)]
    # ... and the first worker catches up by reading only the records numbered since.
    store.searches.clear()
    caught_up = first.on_branch(checkpoint)
    assert store.searches and all(op.filter for op in store.searches)
    assert answers(caught_up) == answers(second)
    assert answers(caught_up) == answers(BaseStoreTopicStore(store, THREAD, visible=checkpoint))
    assert answers(first) == first_view  # the older view is left as it was
    caught_up.append(other["id"], [msg("o2")])
    assert caught_up.visible_ranges() == [(0, 17)]
    # Going back to an earlier checkpoint (a fork) reads the thread whole.
    store.searches.clear()
    fork = caught_up.on_branch(first.visible_ranges())
    assert any(not op.filter for op in store.searches)
    assert answers(fork) == first_view


class FlakyStore(InMemoryStore):
    """An ``InMemoryStore`` whose next record batch stores ``keep`` puts and then fails.

    Like a store without transactions dying halfway (``keep=None``: fail before the batch).
    It also checks that no record key is ever written twice.
    """

    def __init__(self) -> None:
        super().__init__()
        self.fail_next: bool = False
        self.keep: int | None = 0
        self.fail_head = False
        self.written: set[tuple[tuple[str, ...], str]] = set()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        puts = [op for op in ops if isinstance(op, PutOp)]
        if self.fail_head and any(op.key == "head" for op in puts):
            self.fail_head = False
            raise ConnectionError("lost the connection while reserving")
        records = [op for op in puts if op.namespace[-1] == "records"]
        failing = self.fail_next and bool(records)
        landing = records[: self.keep or 0] if failing else records
        for op in landing:
            assert (op.namespace, op.key) not in self.written, f"{op.key} written twice"
            self.written.add((op.namespace, op.key))
        if failing:
            self.fail_next = False
            super().batch(landing)
            raise ConnectionError("lost the connection mid-batch")
        return super().batch(ops)


def test_a_batch_failing_midway_loses_nothing_acknowledged_and_a_retry_stores_once() -> None:
    flaky = FlakyStore()
    store = BaseStoreTopicStore(flaky, THREAD)
    topic = store.create_topic("t", "")
    store.append(topic["id"], [msg("m1"), msg("m2")])
    acknowledged = store.visible_ranges()
    flaky.fail_next, flaky.keep = True, 2
    batch = [msg("m3"), msg("m4"), msg("m5"), msg("m6")]
    with pytest.raises(ConnectionError):
        store.append(topic["id"], batch)

    # The branch the checkpoint recorded sees what was acknowledged, and nothing more ...
    branch = BaseStoreTopicStore(flaky, THREAD, visible=acknowledged)
    assert [m["id"] for m in branch.messages(topic["id"])] == ["m1", "m2"]
    # ... so re-running the turn there stores each message once, after the gap.
    branch.append(topic["id"], batch)
    again = BaseStoreTopicStore(flaky, THREAD, visible=branch.visible_ranges())
    assert [m["id"] for m in again.messages(topic["id"])] == ["m1", "m2", "m3", "m4", "m5", "m6"]
    assert again.meta(topic["id"])["message_count"] == 6
    assert [m["id"] for m in again.transcript()] == ["m1", "m2", "m3", "m4", "m5", "m6"]

    # The view of every record keeps the half that landed and counts each id once.
    everything = BaseStoreTopicStore(flaky, THREAD)
    assert [m["id"] for m in everything.messages(topic["id"])] == [
        *("m1", "m2", "m3", "m4", "m5", "m6")
    ]
    # The writer that failed learns what landed: its retry is refused for those, as the
    # JSONL store refuses ids already stored, and the rest goes in once.
    with pytest.raises(ValueError, match="already stored"):
        store.append(topic["id"], batch)
    store.append(topic["id"], batch[2:])
    assert [m["id"] for m in store.messages(topic["id"])] == ["m1", "m2", "m3", "m4", "m5", "m6"]
    reopened, continued = answers(BaseStoreTopicStore(flaky, THREAD)), answers(store)
    # Only the ranges differ (a view of every record counts what it wrote, not what others
    # did), and when m6 was stored (the fork's copy comes first).
    assert reopened.pop("ranges") == [(0, 13)] and continued.pop("ranges") == [(0, 5), (11, 13)]
    for found in (reopened, continued):
        found["metas"][0].pop("updated_at")
    assert reopened == continued


def test_a_failed_reservation_or_batch_leaves_a_gap_never_a_collision() -> None:
    flaky = FlakyStore()
    store = BaseStoreTopicStore(flaky, THREAD)
    topic = store.create_topic("t", "")
    flaky.fail_head = True
    with pytest.raises(ConnectionError):
        store.append(topic["id"], [msg("m1")])
    flaky.fail_next, flaky.keep = True, None
    with pytest.raises(ConnectionError):
        store.set_brief(topic["id"], "n", "b")
    assert store.head() == 3  # the brief's number was reserved; its record never written
    # A process that crashed after reserving: a new one numbers after the head.
    other = BaseStoreTopicStore(flaky, THREAD)
    other.append(topic["id"], [msg("m1")])
    store.append(topic["id"], [msg("m2")])  # the failed writer continues after both
    seqs = [r.seq for r in other.stored_records()]
    assert seqs == sorted(set(seqs)) and seqs[0] == 0
    final = BaseStoreTopicStore(flaky, THREAD)
    assert [m["id"] for m in final.messages(topic["id"])] == ["m1", "m2"]
    assert final.meta(topic["id"])["name"] == "t"


def test_postgres_batches_are_all_or_nothing(postgres_store: BaseStore) -> None:
    """What crash safety rests on: ``PostgresStore`` runs a batch of puts as one statement."""
    namespace = ("langgraph_topics", "atomic", "records")
    good = PutOp(namespace, "1", {"record": "fine"}, index=False)
    bad = PutOp(namespace, "2", {"record": "nul \x00 in jsonb"}, index=False)
    with pytest.raises(Exception):  # noqa: B017 - psycopg's error for a NUL in jsonb
        postgres_store.batch([good, bad])
    assert postgres_store.search(namespace) == []


# -------------------------------------------------------------------------------- copying


def _filled_jsonl(root: Path) -> tuple[JsonlTopicStore, list[SeqRanges]]:
    """A JSONL thread of real conversations on two branches; returns it and the branches."""
    store = JsonlTopicStore(root)
    records = subject_records(list(SUBJECTS))
    per_subject = len(records) // len(SUBJECTS)
    topic_ids = []
    for index, subject in enumerate(SUBJECTS):
        block = records[index * per_subject : (index + 1) * per_subject]
        topic = store.create_topic(subject, f"about {subject}", created_at=block[0]["timestamp"])
        topic_ids.append(topic["id"])
        store.append(topic["id"], block[: per_subject // 2])  # type: ignore[arg-type]
        store.append(topic["id"], block[per_subject // 2 :])  # type: ignore[arg-type]
        store.set_brief(topic["id"], subject.title(), f"all about {subject}", card=card(subject))
        if index == 1:
            middle = store.visible_ranges()
    store.link(topic_ids[0], topic_ids[1], "related")
    fork = store.on_branch(middle)
    fork.append(topic_ids[0], [msg("forked", "on the fork", timestamp="2024-09-01T00:00:00")])
    fork.create_topic("fork topic", "only on the fork")
    return JsonlTopicStore(root), [store.visible_ranges(), fork.visible_ranges()]


def test_copy_keeps_numbers_ids_and_answers_and_is_idempotent(
    tmp_path: Path, base_store: BaseStore
) -> None:
    source, branches = _filled_jsonl(tmp_path)
    target = BaseStoreTopicStore(base_store, THREAD)
    written = copy_jsonl_topics(source, target)
    assert written == len(source.raw_records())
    assert answers(target) == answers(source)
    assert target.visible_ranges() == source.visible_ranges()
    for ranges in branches:
        assert answers(target.on_branch(ranges)) == answers(source.on_branch(ranges))
    assert copy_jsonl_topics(source, target) == 0
    assert copy_jsonl_topics(source, BaseStoreTopicStore(base_store, THREAD)) == 0
    assert answers(BaseStoreTopicStore(base_store, THREAD)) == answers(source)
    # The copy goes on where the JSONL store stopped.
    end = source.visible_ranges()[-1][1]
    target.append(target.topic_ids()[0], [msg("after", "after the move")])
    assert target.stored_records()[-1].seq == end
    assert target.visible_ranges() == [(0, end + 1)]


def test_an_interrupted_copy_finishes_when_run_again(tmp_path: Path) -> None:
    source, _ = _filled_jsonl(tmp_path)
    flaky = FlakyStore()
    flaky.fail_next, flaky.keep = True, 5
    target = BaseStoreTopicStore(flaky, THREAD)
    with pytest.raises(ConnectionError):
        copy_jsonl_topics(source, target)
    assert copy_jsonl_topics(source, target) == len(source.raw_records()) - 5
    assert answers(target) == answers(source)
    assert copy_jsonl_topics(source, target) == 0


def test_copy_keeps_unnumbered_legacy_lines_visible_to_every_branch(tmp_path: Path) -> None:
    source = JsonlTopicStore(tmp_path)
    topic = source.create_topic("t", "", created_at="2024-01-01T00:00:00+00:00")
    source.append(topic["id"], [msg("m1", timestamp="2024-01-01T00:00:01+00:00")])
    path = source.file_path(topic["id"])
    lines = path.read_text("utf-8").splitlines()
    legacy = [json.loads(line) for line in lines]
    for record in legacy:
        record.pop("seq")
    path.write_text("\n".join(json.dumps(r) for r in legacy) + "\n", "utf-8")
    source = JsonlTopicStore(tmp_path)
    source.append(topic["id"], [msg("m2", timestamp="2024-01-01T00:00:02+00:00")])
    target = BaseStoreTopicStore(InMemoryStore(), THREAD)
    copy_jsonl_topics(source, target)
    assert [m["id"] for m in target.messages(topic["id"])] == ["m1", "m2"]
    branch = source.visible_ranges()
    assert [m["id"] for m in target.on_branch(branch).messages(topic["id"])] == ["m1", "m2"]
    assert [m["id"] for m in target.on_branch([]).messages(topic["id"])] == ["m1"]
    for ranges in (None, [], branch):
        view = target if ranges is None else target.on_branch(ranges)
        assert answers(view) == answers(source if ranges is None else source.on_branch(ranges))
    assert copy_jsonl_topics(source, target) == 0


def test_copy_refuses_a_thread_with_records_of_its_own(tmp_path: Path) -> None:
    source, _ = _filled_jsonl(tmp_path)
    target = BaseStoreTopicStore(InMemoryStore(), THREAD)
    target.create_topic("mine", "")
    before = snapshot(target)
    with pytest.raises(ValueError, match="another record numbered 0"):
        copy_jsonl_topics(source, target)
    assert snapshot(target) == before


# ------------------------------------------------------------------------------- property


OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("create"), st.integers(0, 5), st.integers(0, 3)),
        st.tuples(st.just("append"), st.integers(0, 5), st.lists(st.integers(0, 15), max_size=4)),
        st.tuples(st.just("brief"), st.integers(0, 5), st.booleans()),
        st.tuples(st.just("link"), st.integers(0, 5), st.integers(0, 5)),
        st.tuples(st.just("fork"), st.integers(0, 5), st.integers(0, 5)),
        st.tuples(st.just("hop"), st.integers(0, 5), st.integers(0, 5)),
    ),
    max_size=25,
)


def _apply(store: AnyStore, operation: tuple[Any, ...], created: list[str]) -> object:
    """One operation; its outcome with topic ids replaced by their creation index."""
    kind, first, second = operation
    pick = created[first % len(created)] if created else "topic-00000000"
    try:
        if kind == "create":
            parent = pick if second == 0 and created else None
            meta = store.create_topic(f"t{len(created)}", "b", parent_id=parent)
            created.append(meta["id"])
        elif kind == "append":
            stamp = {"timestamp": f"2024-01-0{1 + first % 3}T00:00:00Z"} if first % 2 else {}
            store.append(pick, [msg(f"m{i}", f"text {i}", **stamp) for i in second])
        elif kind == "brief":
            store.set_brief(pick, "n", "b", card=card("c") if second else None)
        elif kind == "link":
            other = created[second % len(created)] if created else pick
            store.link(pick, other, "related")
    except (KeyError, ValueError) as error:
        return type(error).__name__
    return "ok"


def _normalized(store: AnyStore, created: list[str]) -> object:
    index = {topic_id: n for n, topic_id in enumerate(created)}
    found = answers(store)
    for meta in found["metas"]:
        meta.pop("updated_at")
        meta.pop("created_at")
        meta["id"] = index[meta["id"]]
        meta["parent_id"] = index.get(meta["parent_id"] or "")
        meta.pop("file")
    found["topic_ids"] = [index[t] for t in found["topic_ids"]]
    found["links"] = [[(index[t], kind) for t, kind in links] for links in found["links"]]
    found["message_ids"] = {m: index[t] for m, t in found["message_ids"].items()}
    found["located"] = [index.get(t or "") for t in found["located"]]
    found["time_index"] = {day: [index[t] for t in ts] for day, ts in found["time_index"].items()}
    return found


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(operations=OPERATIONS)
def test_the_base_store_answers_as_the_jsonl_store_does(
    tmp_path_factory: pytest.TempPathFactory, operations: list[tuple[Any, ...]]
) -> None:
    jsonl: AnyStore = JsonlTopicStore(tmp_path_factory.mktemp("jsonl"))
    memory = InMemoryStore()
    shared: AnyStore = BaseStoreTopicStore(memory, THREAD)
    created: dict[str, list[str]] = {"jsonl": [], "base": []}
    for operation in operations:
        if operation[0] == "fork":
            ranges = jsonl.visible_ranges()[: operation[1] % 3]
            assert ranges == shared.visible_ranges()[: operation[1] % 3]
            jsonl, shared = jsonl.on_branch(ranges), shared.on_branch(ranges)
            continue
        if operation[0] == "hop":  # another worker takes the branch on from its checkpoint
            ranges = jsonl.visible_ranges()
            start = BaseStoreTopicStore(memory, THREAD, visible=ranges[: operation[1] % 2])
            jsonl, shared = jsonl.on_branch(ranges), start.on_branch(ranges)
            continue
        outcome = _apply(jsonl, operation, created["jsonl"])
        assert _apply(shared, operation, created["base"]) == outcome
        assert shared.visible_ranges() == jsonl.visible_ranges()
    assert _normalized(shared, created["base"]) == _normalized(jsonl, created["jsonl"])
    reopened = BaseStoreTopicStore(memory, THREAD, visible=shared.visible_ranges())
    assert _normalized(reopened, created["base"]) == _normalized(shared, created["base"])
