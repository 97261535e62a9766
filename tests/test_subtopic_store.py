"""Subtopics in both topic stores: a split hands a topic's messages to children in one record.

Every contract test runs against the JSONL store and ``BaseStoreTopicStore`` on an
``InMemoryStore`` and on a real ``PostgresStore`` (``test_review_stores.py``'s pattern), so that
they answer alike; the property test runs on the two embedded ones. Crash safety is shown by
killing a process at every write point of a split (JSONL files and the retrieval index), and by
cutting a ``BaseStore`` view off at every ``batch`` call of one.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import fault_points
import pytest
from conftest import AnyStore, Opener
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.checks import CheckReport, check_partition, check_topic_files
from langgraph_topics.retrieval.message_index import (
    REKEYED_FILE,
    MessageIndex,
    open_message_index,
)
from langgraph_topics.state.records import StoredMessage, SubtopicPart
from langgraph_topics.stores.base_store_topics import BaseStoreTopicStore, copy_jsonl_topics
from langgraph_topics.stores.protocols import SplittableTopicStore
from langgraph_topics.stores.seq_ranges import SeqRanges
from langgraph_topics.stores.store_audit import audit_store_records
from langgraph_topics.stores.topic_audit import audit_topic_files
from langgraph_topics.stores.topic_store import JsonlTopicStore

SPLIT_AT = "2024-02-01T00:00:00+00:00"


def msg(number: int, content: str = "hello") -> StoredMessage:
    return {
        "id": f"m{number}",
        "role": "user",
        "content": content,
        "timestamp": f"2024-01-{number:02d}T10:00:00",
    }


def part(name: str, *ids: str) -> SubtopicPart:
    return {"name": name, "brief": f"about {name}", "message_ids": list(ids)}


def ids(messages: Sequence[StoredMessage]) -> list[str]:
    return [m["id"] for m in messages]


def kyoto(store: AnyStore) -> str:
    """A topic of six messages, m1..m6 on six days."""
    topic = store.create_topic("Kyoto", "trip", created_at="2024-01-01T00:00:00+00:00")["id"]
    store.append(topic, [msg(n) for n in range(1, 7)])
    return topic


def invariant_1(store: AnyStore, root: Path | None, expected: set[str]) -> None:
    """Every id once across the topics, the transcript complete, and ``check`` passing."""
    located = store.message_ids()
    assert set(located) == expected
    transcript = ids(store.transcript())
    assert sorted(transcript) == sorted(expected)
    held = [i for topic in store.topic_ids() for i in ids(store.messages(topic))]
    assert sorted(held) == sorted(expected)  # each once, in the topic that locate names
    assert all(located[i] == t for t in store.topic_ids() for i in ids(store.messages(t)))
    if isinstance(store, JsonlTopicStore):
        audit = audit_topic_files(root or store.root, None)
    else:
        audit = audit_store_records(store.stored_records(), None)
    report = CheckReport()
    check_partition(report, [], located, len(expected))
    check_topic_files(report, audit, [])
    assert report.ok, report.findings


def test_a_split_hands_each_message_to_one_child_and_reads_the_same_after_a_reopen(
    opener: Opener,
) -> None:
    store = opener()
    assert isinstance(store, SplittableTopicStore)
    parent = kyoto(store)
    first, second = store.split_topic(
        parent,
        [part("temples", "m5", "m1", "m3"), part("food", "m2", "m4", "m6")],
        created_at=SPLIT_AT,
    )

    def holds(view: AnyStore) -> None:
        assert view.topic_ids() == [parent, first, second]
        assert view.children(parent) == [first, second] and view.children(first) == []
        assert ids(view.messages(first)) == ["m1", "m3", "m5"]  # the parent's order
        assert ids(view.messages(second)) == ["m2", "m4", "m6"]
        assert view.messages(parent) == []
        assert view.meta(parent)["message_count"] == 0
        assert view.meta(first)["message_count"] == 3
        assert view.meta(first)["parent_id"] == parent
        assert view.meta(first)["name"] == "temples"
        assert view.meta(first)["created_at"] == SPLIT_AT
        assert view.locate("m3") == first and view.locate("m4") == second
        assert view.message_ids() == {
            **dict.fromkeys(["m1", "m3", "m5"], first),
            **dict.fromkeys(["m2", "m4", "m6"], second),
        }
        assert ids(view.neighbours("m3", 1, 1)) == ["m1", "m3", "m5"]
        assert ids(view.neighbours("m1", 5, 0)) == ["m1"]
        assert set(view.get_messages(["m1", "m6", "nope"])) == {"m1", "m6"}
        assert view.get_messages(["m4"])["m4"]["content"] == "hello"
        assert ids(view.transcript()) == [f"m{n}" for n in range(1, 7)]
        index = view.time_index()
        assert index["2024-01-01"] == [first] and index["2024-01-02"] == [second]
        assert all(parent not in topics for topics in index.values())
        invariant_1(view, None, {f"m{n}" for n in range(1, 7)})

    holds(store)
    holds(opener())


def test_appends_after_a_split_stay_where_they_were_made(opener: Opener) -> None:
    store = opener()
    parent = kyoto(store)
    first, second = store.split_topic(
        parent, [part("a", "m1", "m2", "m3"), part("b", "m4", "m5", "m6")]
    )
    store.append(first, [msg(10)])
    store.append(parent, [msg(11)])  # allowed: the parent's own again, no redirect

    def holds(view: AnyStore) -> None:
        assert ids(view.messages(first)) == ["m1", "m2", "m3", "m10"]
        assert ids(view.messages(parent)) == ["m11"]
        assert view.meta(parent)["message_count"] == 1
        assert view.meta(first)["message_count"] == 4
        assert view.locate("m11") == parent and view.locate("m10") == first
        assert view.time_index()["2024-01-11"] == [parent]
        assert ids(view.neighbours("m10", 1, 0)) == ["m3", "m10"]
        invariant_1(view, None, {f"m{n}" for n in [*range(1, 7), 10, 11]})

    holds(store)
    holds(opener())
    with pytest.raises(ValueError, match="already stored"):
        store.append(second, [msg(1)])


def test_a_subtopic_splits_again(opener: Opener) -> None:
    store = opener()
    parent = kyoto(store)
    first, second = store.split_topic(
        parent, [part("a", "m1", "m2", "m3", "m4"), part("b", "m5", "m6")]
    )
    store.append(first, [msg(7)])
    inner = store.split_topic(first, [part("a1", "m7", "m1"), part("a2", "m2", "m3", "m4")])

    def holds(view: AnyStore) -> None:
        assert view.children(first) == inner and view.children(parent) == [first, second]
        assert ids(view.messages(inner[0])) == ["m1", "m7"]
        assert ids(view.messages(inner[1])) == ["m2", "m3", "m4"]
        assert view.messages(first) == [] and view.meta(first)["message_count"] == 0
        assert view.meta(inner[0])["parent_id"] == first
        assert view.topic_ids() == [parent, first, second, *inner]
        assert view.locate("m7") == inner[0]
        assert view.time_index()["2024-01-07"] == [inner[0]]
        invariant_1(view, None, {f"m{n}" for n in range(1, 8)})

    holds(store)
    holds(opener())


def footprint(store: AnyStore) -> object:
    """What is stored: file sizes, or the thread's records and head."""
    if isinstance(store, JsonlTopicStore):
        return sorted((p.name, p.stat().st_size) for p in store.root.rglob("*") if p.is_file())
    return len(store.stored_records()), store.head()


def test_a_bad_split_is_refused_and_writes_nothing(opener: Opener) -> None:
    store = opener()
    parent = kyoto(store)
    other = store.create_topic("Other", "")["id"]
    store.append(other, [msg(9)])
    before = footprint(store)
    six = [f"m{n}" for n in range(1, 7)]
    refused: list[tuple[list[SubtopicPart], str]] = [
        ([part("all", *six)], "at least two parts"),
        ([part("a", *six), part("b")], r"part 1 \('b'\).*is empty"),
        ([part("a", *six[:3]), part("b", *six[3:], "m9")], "'m9' is not in topic"),
        ([part("a", *six[:3]), part("b", *six[3:], "zz")], "'zz' is not in topic"),
        ([part("a", *six[:4]), part("b", *six[3:])], "'m4' is in parts 0 and 1"),
        ([part("a", *six[:2]), part("b", *six[3:])], "'m3' of topic .* is in no part"),
        ([part("a", "m1", "m1", *six[1:3]), part("b", *six[3:])], "'m1' is in parts 0 and 0"),
    ]
    for parts, message in refused:
        with pytest.raises(ValueError, match=message):
            store.split_topic(parent, parts)
    with pytest.raises(ValueError, match="ISO-8601"):
        store.split_topic(parent, [part("a", *six[:3]), part("b", *six[3:])], created_at="soon")
    with pytest.raises(KeyError, match="unknown topic"):
        store.split_topic("topic-nope", [part("a", "m1"), part("b", "m2")])
    assert footprint(store) == before
    assert store.topic_ids() == [parent, other] and store.children(parent) == []
    store.split_topic(parent, [part("a", *six[:3]), part("b", *six[3:])])
    after = footprint(store)
    with pytest.raises(ValueError, match="is already split"):
        store.split_topic(parent, [part("a", *six[:3]), part("b", *six[3:])])
    store.merge_topics(other, store.children(parent)[0])
    with pytest.raises(KeyError, match="merged into"):
        store.split_topic(other, [part("a", "m9"), part("b", "m9")])
    assert len(opener().topic_ids()) == 3 and footprint(store) != after


def test_merges_refuse_split_topics_and_take_subtopics_like_any_topic(opener: Opener) -> None:
    store = opener()
    parent = kyoto(store)
    other = store.create_topic("Other", "", created_at="2024-01-01T00:00:00+00:00")["id"]
    store.append(other, [msg(8)])
    first, second = store.split_topic(
        parent, [part("a", "m1", "m2", "m3"), part("b", "m4", "m5", "m6")]
    )
    for source, target in [(parent, other), (other, parent)]:
        with pytest.raises(ValueError, match=f"topic '{parent}' has subtopics"):
            store.merge_topics(source, target)
    store.merge_topics(other, first)  # another topic into a subtopic
    store.merge_topics(second, first)  # a subtopic into its sibling

    def holds(view: AnyStore) -> None:
        assert view.topic_ids() == [parent, first]
        assert ids(view.messages(first)) == [f"m{n}" for n in [1, 2, 3, 4, 5, 6, 8]]
        assert view.meta(first)["message_count"] == 7
        assert view.locate("m5") == first and view.locate("m8") == first
        assert view.merged_into(second) == first
        assert ids(view.neighbours("m4", 1, 1)) == ["m3", "m4", "m5"]
        assert view.time_index()["2024-01-08"] == [first]
        invariant_1(view, None, {f"m{n}" for n in [*range(1, 7), 8]})

    holds(store)
    holds(opener())


def test_a_topic_holding_a_merged_one_splits_its_messages_and_the_merged_ones(
    opener: Opener,
) -> None:
    store = opener()
    parent = kyoto(store)
    other = store.create_topic("Other", "")["id"]
    store.append(other, [msg(8)])
    store.merge_topics(other, parent)
    first, second = store.split_topic(
        parent, [part("a", "m8", "m1"), part("b", "m2", "m3", "m4", "m5", "m6")]
    )
    for view in (store, opener()):
        assert ids(view.messages(first)) == ["m1", "m8"]
        assert view.meta(parent)["message_count"] == 0 and view.messages(parent) == []
        assert view.locate("m8") == first
        assert parent not in view.time_index().get("2024-01-08", [])
        invariant_1(view, None, {f"m{n}" for n in [*range(1, 7), 8]})


def test_a_branch_that_never_recorded_the_split_sees_the_parent_whole(opener: Opener) -> None:
    store = opener()
    parent = kyoto(store)
    before: SeqRanges = store.visible_ranges()
    first, second = store.split_topic(
        parent, [part("a", "m1", "m2", "m3"), part("b", "m4", "m5", "m6")]
    )
    branch = opener(visible=before)
    assert branch.topic_ids() == [parent] and branch.children(parent) == []
    assert ids(branch.messages(parent)) == [f"m{n}" for n in range(1, 7)]
    assert branch.meta(parent)["message_count"] == 6
    assert set(branch.message_ids().values()) == {parent}
    invariant_1(branch, None, {f"m{n}" for n in range(1, 7)})
    # The fork splits otherwise; each branch keeps its own split.
    again = branch.split_topic(
        parent, [part("x", "m1"), part("y", *[f"m{n}" for n in range(2, 7)])]
    )
    assert set(again).isdisjoint({first, second})
    assert opener(visible=branch.visible_ranges()).children(parent) == again
    on_split = opener(visible=store.visible_ranges())
    assert on_split.children(parent) == [first, second]
    assert ids(on_split.messages(second)) == ["m4", "m5", "m6"]
    assert store.on_branch(before).topic_ids() == [parent]


def test_a_split_cut_short_before_its_record_is_left_out_on_open_and_made_again(
    opener: Opener, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = opener()
    parent = kyoto(store)
    plain = store.create_topic("a topic with a parent", "", parent_id=parent)["id"]
    store_records = store._store

    def dies_at_the_record(topic_id: str | None, records: list[dict[str, Any]]) -> int:
        if records[0]["type"] == "subtopics":
            raise OSError("disk full")  # the children's headers are written, the record not
        return store_records(topic_id, records)

    monkeypatch.setattr(store, "_store", dies_at_the_record)
    with pytest.raises(OSError, match="disk full"):
        store.split_topic(parent, [part("a", "m1", "m2", "m3"), part("b", "m4", "m5", "m6")])
    monkeypatch.undo()
    assert store.topic_ids() == [parent, plain]  # the children left memory as well
    with caplog.at_level(logging.WARNING):
        reopened = opener()
    warnings = [r for r in caplog.records if "a split a crash cut short" in r.getMessage()]
    assert len(warnings) == 1 and "left out 2 empty subtopics" in warnings[0].getMessage()
    assert reopened.topic_ids() == [parent, plain]  # a topic merely made with a parent stays
    assert ids(reopened.messages(parent)) == [f"m{n}" for n in range(1, 7)]
    children = reopened.split_topic(
        parent, [part("a", "m1", "m2", "m3"), part("b", "m4", "m5", "m6")]
    )
    again = opener()
    assert again.children(parent) == children
    assert again.topic_ids() == [parent, plain, *children]
    invariant_1(again, None, {f"m{n}" for n in range(1, 7)})


def test_a_split_reopens_alike_from_the_catalogs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(JsonlTopicStore, "CATALOG_REFRESH_BYTES", 0)  # catalog every write
    store = JsonlTopicStore(tmp_path)
    parent = kyoto(store)
    first, second = store.split_topic(
        parent, [part("a", "m1", "m2"), part("b", "m3", "m4", "m5", "m6")]
    )
    store.append(parent, [msg(12)])
    assert (tmp_path / "topics" / f"{parent}.catalog").exists()
    reopened = JsonlTopicStore(tmp_path)
    assert reopened.message_ids() == store.message_ids()
    assert reopened.children(parent) == [first, second]
    assert reopened.time_index() == store.time_index()
    assert reopened.meta(parent)["message_count"] == 1


def test_a_migration_copy_takes_the_split_along(tmp_path: Path) -> None:
    source = JsonlTopicStore(tmp_path)
    parent = kyoto(source)
    before = source.visible_ranges()
    children = source.split_topic(
        parent, [part("a", "m1"), part("b", *[f"m{n}" for n in range(2, 7)])]
    )
    target = BaseStoreTopicStore(InMemoryStore(), "t")
    copy_jsonl_topics(source, target)
    assert target.children(parent) == children
    assert target.message_ids() == source.message_ids()
    assert ids(target.messages(children[1])) == ids(source.messages(children[1]))
    assert target.on_branch(before).topic_ids() == [parent]


# ------------------------------------------------------------------------ a model of splits

Op = tuple[str, int, int, tuple[int, ...]]
"""``("split", topic, 0, labels)``, ``("merge", source, target, ())``, ``("append", topic, 0, ())``:
topics by creation number; a split's labels give each of the topic's ids, sorted, its part."""


class Model:
    """What each topic holds after a history of splits, merges and appends."""

    def __init__(self, contents: list[list[str]]) -> None:
        self.holding = [list(ids) for ids in contents]
        self.exact = [True] * len(contents)
        """Whether the order is known (a merge orders by time: only the set is compared)."""
        self.live = set(range(len(contents)))
        self.split: set[int] = set()
        self.appended = 0

    def apply(self, op: Op) -> None:
        kind, first, second, labels = op
        if kind == "split":
            held = self.holding[first]
            ordered = sorted(held)
            for label in range(max(labels) + 1):
                chosen = {ordered[n] for n, mine in enumerate(labels) if mine == label}
                self.holding.append([i for i in held if i in chosen])
                self.exact.append(self.exact[first])
                self.live.add(len(self.holding) - 1)
            self.holding[first] = []
            self.split.add(first)
        elif kind == "merge":
            self.holding[second] += self.holding[first]
            self.holding[first] = []
            self.exact[second] = False
            self.live.discard(first)
        else:
            self.holding[first].append(f"x{self.appended}")
            self.appended += 1

    def where(self) -> dict[str, int]:
        return {i: topic for topic, held in enumerate(self.holding) for i in held}


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[list[str]], list[Op]]:
    """Topics with messages, then random splits (nested too), merges of leaves and appends."""
    sizes = draw(st.lists(st.integers(2, 7), min_size=1, max_size=3))
    contents, counter = [], 0
    for size in sizes:
        contents.append([f"m{counter + n:03d}" for n in range(size)])
        counter += size
    model = Model(contents)
    ops: list[Op] = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["split", "split", "merge", "append"]))
        leaves = sorted(model.live - model.split)
        if kind == "split":
            candidates = [t for t in leaves if len(model.holding[t]) >= 2]
            if not candidates:
                continue
            topic = draw(st.sampled_from(candidates))
            size = len(model.holding[topic])
            count = draw(st.integers(2, min(4, size)))
            labels = [
                *range(count),
                *draw(
                    st.lists(
                        st.integers(0, count - 1), min_size=size - count, max_size=size - count
                    )
                ),
            ]
            op: Op = ("split", topic, 0, tuple(draw(st.permutations(labels))))
        elif kind == "merge":
            if len(leaves) < 2:
                continue
            source, target = draw(st.permutations(leaves))[:2]
            op = ("merge", source, target, ())
        else:
            op = ("append", draw(st.sampled_from(sorted(model.live))), 0, ())
        model.apply(op)
        ops.append(op)
    return contents, ops


def replay(store: AnyStore, contents: list[list[str]], ops: list[Op]) -> list[str]:
    """Make the history in a store; returns the topic ids by creation number."""
    topics: list[str] = []
    for n, message_ids in enumerate(contents):
        created = f"2024-01-0{n + 1}T00:00:00+00:00"
        topics.append(store.create_topic(f"t{n}", "", created_at=created)["id"])
        stamp = "2024-01-{:02d}T09:00:00"
        store.append(
            topics[-1],
            [
                {
                    "id": i,
                    "role": "user",
                    "content": i,
                    "timestamp": stamp.format(int(i[1:]) % 28 + 1),
                }
                for i in message_ids
            ],
        )
    appended = 0
    for kind, first, second, labels in ops:
        if kind == "split":
            ordered = sorted(ids(store.messages(topics[first])))
            asked = [
                part(f"p{label}", *[ordered[n] for n, mine in enumerate(labels) if mine == label])
                for label in range(max(labels) + 1)
            ]
            topics += store.split_topic(
                topics[first], asked, created_at="2024-03-01T00:00:00+00:00"
            )
        elif kind == "merge":
            store.merge_topics(topics[first], topics[second])
        else:
            store.append(topics[first], [{"id": f"x{appended}", "role": "user", "content": "late"}])
            appended += 1
    return topics


@pytest.mark.parametrize("kind", ["jsonl", "memory"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories())
def test_random_splits_and_merges_read_as_the_model_says_before_and_after_a_reopen(
    kind: str, history: tuple[list[list[str]], list[Op]]
) -> None:
    contents, ops = history
    model = Model(contents)
    for op in ops:
        model.apply(op)
    with tempfile.TemporaryDirectory() as scratch:
        shared = InMemoryStore()

        def open_store() -> AnyStore:
            if kind == "jsonl":
                return JsonlTopicStore(Path(scratch))
            return BaseStoreTopicStore(shared, "t")

        written = open_store()
        topics = replay(written, contents, ops)
        for view in (written, open_store()):
            assert view.message_ids() == {i: topics[t] for i, t in model.where().items()}
            assert view.topic_ids() == [topics[t] for t in sorted(model.live)]
            for number in sorted(model.live):
                held = ids(view.messages(topics[number]))
                expected = model.holding[number]
                # Its part in the parent's order, then its own appends; merged: the same set.
                assert held == expected if model.exact[number] else sorted(held) == sorted(expected)
                assert view.meta(topics[number])["message_count"] == len(expected)
                assert (len(view.children(topics[number])) >= 2) == (number in model.split)
            invariant_1(view, Path(scratch) if kind == "jsonl" else None, set(model.where()))


# ------------------------------------------------------------------------ the message index


class CountingEmbedder(HashEmbedder):
    """A hashing embedder that counts the texts it embeds."""

    name = "HashEmbedder"

    def __init__(self) -> None:
        super().__init__(dimensions=16)
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts += len(texts)
        return super().embed(texts)


def indexed_topics(index: MessageIndex) -> dict[str, str]:
    """Each message's topic as a search groups it (its current row's code)."""
    snapshot = index.snapshot()
    return {
        message_id: snapshot.topic_names[int(snapshot.codes[row])]
        for message_id, row in index.position.items()
    }


def test_the_index_files_a_split_under_the_children_without_embedding(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    parent = kyoto(store)
    embedder = CountingEmbedder()
    index = open_message_index(tmp_path / "retrieval", embedder, store)
    assert embedder.texts == 6
    token = index.token
    first, second = store.split_topic(
        parent, [part("a", "m1", "m3", "m5"), part("b", "m2", "m4", "m6")]
    )
    assert index.reassign(ids(store.messages(first)), first) == 3
    assert index.reassign(ids(store.messages(first)), first) == 0  # nothing left to move
    assert index.token != token  # cached searches of the old topics are not served
    assert indexed_topics(index)["m1"] == first and indexed_topics(index)["m2"] == parent
    # Reopened before the second child was re-keyed (a crash): opening mends it.
    reopened = open_message_index(tmp_path / "retrieval", embedder, JsonlTopicStore(tmp_path))
    located = JsonlTopicStore(tmp_path).message_ids()
    assert indexed_topics(reopened) == located
    assert embedder.texts == 6  # nothing embedded again
    assert len(reopened) == 6
    lines = (tmp_path / "retrieval" / REKEYED_FILE).read_text().splitlines()
    assert len(lines) == 2  # one compact line per topic and call
    again = MessageIndex(tmp_path / "retrieval", embedder)
    assert indexed_topics(again) == located and embedder.texts == 6
    # Adding the children's messages again is harmless: they are indexed under them.
    again.add(store.messages(second), [second] * 3)
    assert len(again) == 6 and embedder.texts == 6


def test_a_torn_rekey_line_is_cut_and_mended_on_open(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    parent = kyoto(store)
    embedder = CountingEmbedder()
    index = open_message_index(tmp_path / "retrieval", embedder, store)
    first, second = store.split_topic(
        parent, [part("a", "m1", "m2", "m3"), part("b", "m4", "m5", "m6")]
    )
    index.level_with(store.message_ids())
    path = tmp_path / "retrieval" / REKEYED_FILE
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) - 10])  # the second line torn
    reopened = open_message_index(tmp_path / "retrieval", embedder, JsonlTopicStore(tmp_path))
    assert indexed_topics(reopened) == store.message_ids() and embedder.texts == 6
    assert MessageIndex(tmp_path / "retrieval", embedder).topics == reopened.topics


# -------------------------------------------------------------------------------- kill points

SPLIT_PARTS = [part("a", "m1", "m3", "m5"), part("b", "m2", "m4"), part("c", "m6")]


def _prepared(root: Path) -> None:
    """A thread with one topic of six messages, all indexed."""
    store = JsonlTopicStore(root)
    kyoto(store)
    open_message_index(root / "retrieval", CountingEmbedder(), store)


def _split_in_child(root: Path, events: Path, kill: dict[str, Any] | None) -> int:
    """Fork a process that splits the topic and re-keys the index, killed at ``kill``."""
    pid = os.fork()
    if pid == 0:  # the child
        code = 0
        try:
            fault_points.install(fault_points.Injector(fault_points.EventLog(events), kill))
            store = JsonlTopicStore(root)
            index = open_message_index(root / "retrieval", CountingEmbedder(), store)
            store.split_topic(store.topic_ids()[0], SPLIT_PARTS)
            index.level_with(store.message_ids())
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _reopened_whole(root: Path) -> str:
    """Reopen after a kill: invariant 1, the index level, nothing embedded; whole or absent."""
    store = JsonlTopicStore(root)
    every = {f"m{n}" for n in range(1, 7)}
    invariant_1(store, root, every)
    embedder = CountingEmbedder()
    index = open_message_index(root / "retrieval", embedder, store)
    assert embedder.texts == 0
    assert indexed_topics(index) == store.message_ids()
    parent = store.topic_ids()[0]
    children = store.children(parent)
    if not children:  # absent: the parent whole, and the split can be made again
        assert store.topic_ids() == [parent] and len(store.messages(parent)) == 6
        store.split_topic(parent, SPLIT_PARTS)
        index.level_with(store.message_ids())
        invariant_1(JsonlTopicStore(root), root, every)
        return "absent"
    assert [ids(store.messages(c)) for c in children] == [p["message_ids"] for p in SPLIT_PARTS]
    return "whole"


def test_a_process_killed_at_any_write_point_of_a_split_leaves_it_whole_or_absent(
    tmp_path: Path,
) -> None:
    fault_points.preload()
    prepared = tmp_path / "prepared"
    _prepared(prepared)
    counting = tmp_path / "count"
    shutil.copytree(prepared, counting)
    assert _split_in_child(counting, counting / "events.jsonl", None) == 0
    kinds = [e["kind"] for e in fault_points.read_events(counting / "events.jsonl")]
    assert kinds.count("append:topic-topic") == 3 and "append:topic-subtopics" in kinds
    assert "append:retrieval-rekeyed.jsonl" in kinds
    outcomes: dict[str, set[str]] = {}
    for point, kind in enumerate(kinds):
        occurrence = kinds[: point + 1].count(kind)
        variants = ["before", "after"] + (["torn"] if kind.startswith("append:") else [])
        for variant in variants:
            root = tmp_path / f"kill-{point}-{variant}"
            shutil.copytree(prepared, root)
            kill = {"kind": kind, "occurrence": occurrence, "variant": variant, "point": point}
            assert _split_in_child(root, tmp_path / f"{point}-{variant}.jsonl", kill) == -9
            outcomes.setdefault(_reopened_whole(root), set()).add(f"{kind} {variant}")
    assert "append:topic-subtopics after" in outcomes["whole"]
    assert "append:topic-subtopics before" in outcomes["absent"]
    assert "append:topic-subtopics torn" in outcomes["absent"]


class Killed(BaseException):
    """A process that died at a write (the view is dropped, as the process would be)."""


class CutOffStore(InMemoryStore):
    """An ``InMemoryStore`` whose ``batch`` with writes dies at the chosen call."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.kill_at: tuple[int, str] | None = None
        self.error: type[BaseException] = Killed

    def batch(self, ops: Any) -> Any:
        ops = list(ops)
        if not any(isinstance(op, PutOp) for op in ops):
            return super().batch(ops)
        self.writes += 1
        if self.kill_at is not None and self.kill_at[0] == self.writes:
            if self.kill_at[1] == "after":
                super().batch(ops)
            raise self.error
        return super().batch(ops)


def test_a_base_store_view_cut_off_at_any_write_of_a_split_leaves_it_whole_or_absent() -> None:
    counting = CutOffStore()
    kyoto(BaseStoreTopicStore(counting, "t"))
    before = counting.writes
    BaseStoreTopicStore(counting, "t").split_topic(
        BaseStoreTopicStore(counting, "t").topic_ids()[0], SPLIT_PARTS
    )
    writes = counting.writes - before
    assert writes == 8  # per record: the head, then the record (3 headers, 1 subtopics)
    seen: set[str] = set()
    for number in range(1, writes + 1):
        for variant in ("before", "after"):
            store = CutOffStore()
            kyoto(BaseStoreTopicStore(store, "t"))
            view = BaseStoreTopicStore(store, "t")
            parent = view.topic_ids()[0]
            store.kill_at = (store.writes + number, variant)
            with pytest.raises(Killed):
                view.split_topic(parent, SPLIT_PARTS)
            store.kill_at = None
            reopened = BaseStoreTopicStore(store, "t")
            invariant_1(reopened, None, {f"m{n}" for n in range(1, 7)})
            if reopened.children(parent):
                seen.add("whole")
                assert reopened.topic_ids() == [parent, *reopened.children(parent)]
            else:
                seen.add("absent")
                assert reopened.topic_ids() == [parent]
                reopened.split_topic(parent, SPLIT_PARTS)
                assert len(BaseStoreTopicStore(store, "t").children(parent)) == 3
    assert seen == {"whole", "absent"}


def test_a_split_whose_failed_write_landed_after_all_is_taken_in() -> None:
    store = CutOffStore()
    kyoto(BaseStoreTopicStore(store, "t"))
    view = BaseStoreTopicStore(store, "t")
    parent = view.topic_ids()[0]
    store.kill_at, store.error = (store.writes + 8, "after"), OSError  # the record's batch
    with pytest.raises(OSError):
        view.split_topic(parent, SPLIT_PARTS)
    store.kill_at = None
    assert len(view.children(parent)) == 3  # the view learns that the record is stored
    invariant_1(view, None, {f"m{n}" for n in range(1, 7)})
    assert view.message_ids() == BaseStoreTopicStore(store, "t").message_ids()
