"""A crash in the middle of a split, and split plans that need mending, lose nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import MemoryFactory
from conversations import subject_records
from fakes import with_roles

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.roles.protocols import Roles, SplitPlan
from langgraph_topics.splitting.prepared import resolve_plan
from langgraph_topics.state.records import StoredMessage

TESTS = Path(__file__).parent


def test_a_crash_between_topic_append_and_checkpoint_loses_nothing(tmp_path: Path) -> None:
    records = subject_records(["stocks", "kyoto", "sourdough", "fitness"])
    (tmp_path / "records.json").write_text(json.dumps(records), "utf-8")
    script = textwrap.dedent(f"""
        import json, os, sys
        sys.path.insert(0, {str(TESTS)!r})
        from langgraph_topics import Settings, TopicMemory
        from langgraph_topics.roles.native import native_roles
        from langgraph_topics.stores.embeddings import UseEmbedder
        from langgraph_topics.stores.topic_index import ChromaTopicIndex

        # Called right after the split appended messages to a topic file (briefs are
        # written before the appends, the topic index after them).
        ChromaTopicIndex.upsert = lambda *args, **kwargs: os._exit(17)
        roles = native_roles(UseEmbedder())
        memory = TopicMemory(settings=Settings(data_dir={str(tmp_path / "data")!r},
                                               budget_tokens=900), roles=roles)
        memory.import_messages("t", json.load(open({str(tmp_path / "records.json")!r})))
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 17, done.stderr[-2000:]

    with TopicMemory(settings=Settings(data_dir=tmp_path / "data", budget_tokens=900)) as memory:
        stored = memory.services.stores("t").topic_store.message_ids()
        assert stored, "the split wrote to the topic store before dying"
        # The split's records belong to no checkpoint: unseen and reported as in flight, while
        # the messages wait in the working set to be split again.
        before = memory.check("t")
        assert before.ok, before.findings
        assert before.counts["in_flight"] > 0, before.findings
        memory.chat("t", "Where should I stay in Kyoto?")
        state = memory.state("t")
        after = memory.check("t")
        assert after.ok, after.findings
        # Every message that reached the memory before the crash is there, in one place.
        ids = [m["id"] for m in memory.transcript("t")]
        arrived = state["total_messages"] - 2  # the turn above added a question and a reply
        assert len(ids) == len(set(ids)) == state["total_messages"]
        assert {r["id"] for r in records[:arrived]} <= set(ids)


def _units(*groups: list[str]) -> list[list[StoredMessage]]:
    return [
        [
            {"id": i, "role": "user" if n == 0 else "assistant", "content": i}  # type: ignore[misc]
            for n, i in enumerate(group)
        ]
        for group in groups
    ]


def test_resolve_plan_mends_unknown_ids_and_unassigned_units() -> None:
    units = _units(["a1", "a2"], ["b1", "b2"], ["c1", "c2"], ["d1"])
    plan: SplitPlan = {
        "assignments": [
            {"message_ids": ["a1"], "topic_id": "topic-known", "new_key": None},
            {"message_ids": ["a2"], "topic_id": None, "new_key": "n1"},  # unit split: a1 wins
            {"message_ids": ["b1", "b2"], "topic_id": "topic-invented", "new_key": None},
            {"message_ids": ["c1"], "topic_id": None, "new_key": "n1"},
            {"message_ids": ["c1"], "topic_id": "topic-known", "new_key": None},  # twice
            {"message_ids": ["zz"], "topic_id": "topic-known", "new_key": None},  # not given
        ],
        "new_topics": [{"key": "n1", "name": "new", "brief": "b"}],
    }
    destinations, problems = resolve_plan(plan, units, {"topic-known"})
    assert destinations == [
        ("topic", "topic-known"),
        ("topic", "topic-known"),
        ("new", "n1"),
        ("new", "n1"),
    ]
    assert any("topic-invented" in p for p in problems)
    assert any("assigned twice" in p for p in problems)
    assert any("unassigned" in p for p in problems)


class _BrokenSplitter:
    def split(self, units, topics):  # type: ignore[no-untyped-def]
        raise TimeoutError("provider timed out")


class _GarbageSplitter:
    def split(self, units, topics):  # type: ignore[no-untyped-def]
        return {
            "assignments": [{"message_ids": ["nope"], "topic_id": "topic-x", "new_key": None}],
            "new_topics": [],
        }


def test_failing_or_garbage_splitters_lose_no_message(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    for splitter in (_BrokenSplitter(), _GarbageSplitter()):
        memory = make_memory(budget=900, roles=with_roles(roles, splitter=splitter))
        memory.import_messages("t", subject_records(["stocks", "kyoto", "sourdough", "fitness"]))
        topics = memory.topics("t")
        assert topics and sum(t["message_count"] for t in topics) > 0
        assert memory.check("t").ok
        assert len(memory.transcript("t")) == 32


def test_settings_reject_impossible_values(tmp_path: Path) -> None:
    import pytest

    with pytest.raises(ValueError):
        Settings(data_dir=tmp_path, split_trigger=1.5)
    with pytest.raises(ValueError):
        Settings(data_dir=tmp_path, min_active=12, default_active=10)
