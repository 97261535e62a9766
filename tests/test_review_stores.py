"""What the review asks of both topic stores: merging a topic into another, the archive shelf.

Every test runs against the JSONL store and ``BaseStoreTopicStore`` on an ``InMemoryStore`` and on
a real ``PostgresStore``, so that they answer alike (``test_base_store_topics.py`` runs the rest
of the contract).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import AnyStore, Opener
from langgraph.store.memory import InMemoryStore

from langgraph_topics.state.records import ArchivedTopic, StoredMessage
from langgraph_topics.stores.base_store_topics import BaseStoreTopicStore, copy_jsonl_topics
from langgraph_topics.stores.protocols import ReviewableTopicStore
from langgraph_topics.stores.seq_ranges import SeqRanges
from langgraph_topics.stores.topic_audit import audit_topic_files
from langgraph_topics.stores.topic_store import JsonlTopicStore


def msg(message_id: str, stamp: str, content: str = "hello") -> StoredMessage:
    return {"id": message_id, "role": "user", "content": content, "timestamp": stamp}


def two_topics(store: AnyStore) -> tuple[str, str]:
    """A Kyoto topic (m1, m3) and a later duplicate of it (m2, m4), interleaved in time."""
    kyoto = store.create_topic("Kyoto", "trip", created_at="2024-01-01T00:00:00+00:00")["id"]
    again = store.create_topic("Kyoto again", "trip", created_at="2024-01-02T00:00:00+00:00")["id"]
    store.append(kyoto, [msg("m1", "2024-01-01T10:00:00"), msg("m3", "2024-01-03T10:00:00")])
    store.append(again, [msg("m2", "2024-01-02T10:00:00"), msg("m4", "2024-02-04T10:00:00")])
    return kyoto, again


def test_a_merged_topic_reads_as_its_target_and_every_id_stays_stored_once(
    opener: Opener,
) -> None:
    store = opener()
    assert isinstance(store, ReviewableTopicStore)
    kyoto, again = two_topics(store)
    store.merge_topics(again, kyoto)

    def holds(view: AnyStore) -> None:
        assert view.topic_ids() == [kyoto]
        assert [m["id"] for m in view.messages(kyoto)] == ["m1", "m2", "m3", "m4"]
        assert view.meta(kyoto)["message_count"] == 4
        assert view.message_ids() == dict.fromkeys(["m1", "m3", "m2", "m4"], kyoto)
        assert view.locate("m2") == kyoto
        assert [m["id"] for m in view.neighbours("m2", 1, 1)] == ["m1", "m2", "m3"]
        assert set(view.get_messages(["m2", "m4"])) == {"m2", "m4"}
        assert [m["id"] for m in view.transcript()] == ["m1", "m2", "m3", "m4"]
        assert view.time_index()["2024-02-04"] == [kyoto]
        assert view.merged_into(again) == kyoto and view.merged_into(kyoto) is None
        with pytest.raises(KeyError, match="merged into"):
            view.messages(again)
        with pytest.raises(KeyError, match="merged into"):
            view.append(again, [msg("m9", "2024-03-01T00:00:00")])

    holds(store)
    holds(opener())  # the same after a reopen
    store.append(kyoto, [msg("m5", "2024-01-05T10:00:00")])
    assert [m["id"] for m in opener().messages(kyoto)] == ["m1", "m2", "m3", "m5", "m4"]


def test_merging_again_writes_nothing_and_bad_merges_are_refused(opener: Opener) -> None:
    store = opener()
    kyoto, again = two_topics(store)
    store.merge_topics(again, kyoto)
    before = store.visible_ranges()
    store.merge_topics(again, kyoto)
    assert store.visible_ranges() == before
    with pytest.raises(ValueError, match="itself"):
        store.merge_topics(kyoto, kyoto)
    with pytest.raises(KeyError, match="unknown topic"):
        store.merge_topics("topic-nope", kyoto)
    with pytest.raises(KeyError, match="merged into"):
        store.merge_topics(kyoto, again)


def test_a_branch_that_never_recorded_the_merge_still_sees_two_topics(opener: Opener) -> None:
    store = opener()
    kyoto, again = two_topics(store)
    before: SeqRanges = store.visible_ranges()
    store.merge_topics(again, kyoto)
    branch = opener(visible=before)
    assert branch.topic_ids() == [kyoto, again]
    assert [m["id"] for m in branch.messages(again)] == ["m2", "m4"]
    assert branch.merged_into(again) is None
    assert opener(visible=store.visible_ranges()).topic_ids() == [kyoto]


def test_merges_chain_and_the_files_hold_each_id_once(opener: Opener, tmp_path: Path) -> None:
    store = opener()
    kyoto, again = two_topics(store)
    third = store.create_topic("Kyoto 3", "trip", created_at="2024-03-01T00:00:00+00:00")["id"]
    store.append(third, [msg("m6", "2024-03-01T10:00:00")])
    store.merge_topics(third, again)
    store.merge_topics(again, kyoto)
    reopened = opener()
    assert reopened.topic_ids() == [kyoto]
    assert [m["id"] for m in reopened.messages(kyoto)] == ["m1", "m2", "m3", "m4", "m6"]
    assert reopened.merged_into(third) == kyoto
    if isinstance(store, JsonlTopicStore):
        audit = audit_topic_files(tmp_path, None)
        assert audit.duplicates() == {} and len(audit.branch) == 5


def entry(topic_id: str, month: str, at: str) -> ArchivedTopic:
    return {
        "topic_id": topic_id,
        "name": "Kyoto",
        "month": month,
        "first_day": f"{month}-01",
        "last_day": f"{month}-03",
        "archived_at": at,
        "reason": "dormant",
        "message_count": 2,
        "brief": "trip \x00 nul",
        "summary": {
            "version": 1,
            "text": "trip",
            "topics": [],
            "decisions": [],
            "unresolved": [],
            "entities": [],
            "tokens_saved": 0,
            "source": "native",
        },
    }


def test_the_shelf_files_one_summary_per_topic_by_month(opener: Opener, tmp_path: Path) -> None:
    store = opener()
    kyoto, again = two_topics(store)
    store.save_archive(entry(kyoto, "2024-01", "2030-01-01T00:00:00+00:00"))
    store.save_archive(entry(again, "2024-02", "2030-01-01T00:00:00+00:00"))
    store.save_archive(entry(kyoto, "2024-03", "2030-02-01T00:00:00+00:00"))  # filed again
    reopened = opener()
    assert [(e["topic_id"], e["month"]) for e in reopened.archive_entries()] == [
        (again, "2024-02"),
        (kyoto, "2024-03"),
    ]
    found = reopened.archive_entry(kyoto)
    assert found is not None and found["brief"] == "trip \x00 nul"
    if isinstance(store, JsonlTopicStore):
        shelf = tmp_path / "topics" / "archived"
        assert sorted(p.relative_to(tmp_path).as_posix() for p in shelf.rglob("*.json")) == [
            f"topics/archived/2024-02/{again}.json",
            f"topics/archived/2024-03/{kyoto}.json",
        ]
    reopened.drop_archive(kyoto)
    assert opener().archive_entry(kyoto) is None
    with pytest.raises(KeyError):
        store.save_archive(entry("topic-nope", "2024-01", "2030-01-01T00:00:00+00:00"))


def test_a_migration_copy_takes_the_merges_and_the_shelf_along(tmp_path: Path) -> None:
    source = JsonlTopicStore(tmp_path)
    kyoto, again = two_topics(source)
    source.merge_topics(again, kyoto)
    source.save_archive(entry(kyoto, "2024-02", "2030-01-01T00:00:00+00:00"))
    target = BaseStoreTopicStore(InMemoryStore(), "t")
    assert copy_jsonl_topics(source, target) > 0
    assert target.topic_ids() == [kyoto] and target.merged_into(again) == kyoto
    assert target.messages(kyoto) == source.messages(kyoto)
    assert target.archive_entries() == source.archive_entries()
    assert copy_jsonl_topics(source, target) == 0  # again: nothing left to copy


def test_merges_made_after_reads_and_chains_of_them_are_read_through(opener: Opener) -> None:
    # The store answers from an index of merges: it must be made again after a merge of its
    # own, along a chain of merges, and on opening (the merge records read back).
    store = opener()
    assert isinstance(store, ReviewableTopicStore)
    kyoto, again = two_topics(store)
    third = store.create_topic("Kyoto once more", "trip", created_at="2024-01-03T00:00:00+00:00")
    store.append(third["id"], [msg("m6", "2024-01-06T10:00:00")])
    assert [m["id"] for m in store.messages(kyoto)] == ["m1", "m3"]  # the index is made here
    store.merge_topics(again, kyoto)
    assert [m["id"] for m in store.messages(kyoto)] == ["m1", "m2", "m3", "m4"]
    store.merge_topics(kyoto, third["id"])  # a chain: again → kyoto → third
    expected = ["m1", "m2", "m3", "m6", "m4"]
    for view in (store, opener()):
        assert [m["id"] for m in view.messages(third["id"])] == expected
        assert view.meta(third["id"])["message_count"] == 5
        assert view.locate("m2") == third["id"]
        assert [m["id"] for m in view.neighbours("m6", 1, 1)] == ["m3", "m6", "m4"]
