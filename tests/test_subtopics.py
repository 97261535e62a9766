"""Subtopics through the graph: a topic past its limit is divided, never compressed (§4.5, §8).

The store side (the ``subtopics`` record, both stores, kills) is ``test_subtopic_store.py``;
here: when the split divides, what the registry, the windows, the index search, the review,
``topics`` and its map make of it, and that no message is lost on the way.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import DATA

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.datasets import load_locomo
from langgraph_topics.settings import DEFAULT_SUBTOPIC_LIMIT_TOKENS
from langgraph_topics.stores.embeddings import UseEmbedder
from langgraph_topics.stores.topic_index import ChromaTopicIndex, topic_document
from langgraph_topics.subtopics import division

HOTELS = [
    "Which ryokan near Gion has a private onsen bath for our Kyoto stay?",
    "Hiiragiya and Tawaraya are classic Kyoto ryokan with wooden baths, book months ahead.",
    "Is a ryokan dinner kaiseki included in the Kyoto room rate usually?",
    "Most Kyoto ryokan include a kaiseki dinner and breakfast in the nightly rate.",
    "Should we pick a machiya townhouse instead of a ryokan for Kyoto?",
    "A machiya in Kyoto gives you a whole house; a ryokan gives you service and meals.",
]
TEMPLES = [
    "When should we visit Fushimi Inari shrine in Kyoto to avoid crowds?",
    "Go to Fushimi Inari at dawn: the Kyoto torii gates are empty before seven.",
    "Is Kinkaku-ji golden pavilion in Kyoto worth the bus ride north?",
    "Yes, Kinkaku-ji reflects in its pond; pair it with Ryoan-ji rock garden nearby in Kyoto.",
    "How long does the Kiyomizu-dera temple walk through Higashiyama in Kyoto take?",
    "About two hours from Kiyomizu-dera down the Higashiyama lanes to Yasaka shrine in Kyoto.",
]


def kyoto_history(rounds: int = 4) -> list[dict[str, Any]]:
    """One long Kyoto trip: hotels first, then temples, days apart."""
    lines = HOTELS * rounds + TEMPLES * rounds
    return [
        {
            "id": f"k{number}",
            "role": ("user", "assistant")[number % 2],
            "content": text,
            "timestamp": f"2024-03-{1 + number // 12:02d}T{9 + number % 12:02d}:00:00",
        }
        for number, text in enumerate(lines)
    ]


def settings_for(tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "data_dir": tmp_path / "memory",
        "budget_tokens": 600,
        "keep_recent": 4,
        "subtopic_limit_tokens": 500,
        "language": "en",
        **overrides,
    }
    return Settings(**values)


@pytest.fixture
def memory(tmp_path: Path, embedder: UseEmbedder) -> Iterator[TopicMemory]:
    with TopicMemory(settings=settings_for(tmp_path), embedder=embedder) as made:
        yield made


def divided(memory: TopicMemory, thread: str) -> dict[str, Any]:
    """The registry's divided topics."""
    topics = memory.state(thread)["topics"]
    return {topic_id: r for topic_id, r in topics.items() if r["status"] == "split"}


def indexed(memory: TopicMemory, thread: str) -> dict[str, tuple[str, str]]:
    """What the thread's topic index holds: topic id → (its document, its status)."""
    index = memory.services.stores(thread).topic_index
    assert isinstance(index, ChromaTopicIndex)
    return index.entries()


def test_a_topic_past_its_limit_is_divided_and_keeps_every_message(memory: TopicMemory) -> None:
    thread = "trip"
    history = kyoto_history()
    memory.import_messages(thread, history)
    report = memory.check(thread)
    assert report.ok, report.findings
    assert {m["id"] for m in memory.transcript(thread)} == {m["id"] for m in history}

    parents = divided(memory, thread)
    assert parents, "the Kyoto topic grew past 500 tokens: it must have been divided"
    registry = memory.state(thread)["topics"]
    store = memory.services.stores(thread).topic_store
    counter = memory.services.token_counter
    for parent_id, record in parents.items():
        assert len(record["children"]) >= 2
        assert store.messages(parent_id) == []  # a divided topic holds nothing itself
        for child in record["children"]:
            assert registry[child]["parent_id"] == parent_id
            assert store.meta(child)["parent_id"] == parent_id
    leaves = [t for t, r in registry.items() if r["status"] != "split"]
    for leaf in leaves:
        # A leaf starts at half the limit at most; the split adds at most one batch to it.
        tokens = sum(counter(m["content"]) for m in store.messages(leaf))
        assert tokens <= 2 * memory.settings.subtopic_limit_tokens
    # Every stored message sits in one leaf: the index agrees with the store.
    located = store.message_ids()
    assert set(located.values()) <= set(leaves)
    index = memory.services.stores(thread).message_index
    assert all(index.topics[index.position[i]] == t for i, t in located.items())


def test_subtopics_are_named_for_what_tells_them_apart(memory: TopicMemory) -> None:
    thread = "trip"
    memory.import_messages(thread, kyoto_history())
    registry = memory.state(thread)["topics"]
    names = [record["name"].casefold() for record in registry.values()]
    assert len(set(names)) == len(names), names  # distinct in the thread, parents included
    assert not any(re.search(r"\(\d+\)$", name) for name in names)  # no "ryokan (2)"
    parents = divided(memory, thread).values()
    assert parents
    for record in parents:
        children = [registry[child]["name"] for child in record["children"]]
        assert record["name"] not in children


def test_windows_read_the_subtopics_and_a_hit_on_the_parent_wakes_them(
    memory: TopicMemory,
) -> None:
    thread = "trip"
    memory.import_messages(thread, kyoto_history())
    parents = divided(memory, thread)
    parent_id, record = next(iter(parents.items()))
    memory.chat(thread, "Remind me which ryokan near Gion had the private onsen?")
    results = memory.state(thread)["topic_results"]
    assert results, "the turn must read some topic"
    assert parent_id not in results  # never read itself

    # Every subtopic asleep: a recall cue naming the subject finds them through the parent.
    topics = dict(memory.state(thread)["topics"])
    index = memory.services.stores(thread).topic_index
    for topic_id, other in topics.items():
        if other["status"] == "active":
            topics[topic_id] = {**other, "status": "dormant"}
            index.set_status(topic_id, "dormant")
    memory.graph.update_state(memory.run_config(thread), {"topics": topics}, as_node="bookkeeping")
    memory.chat(thread, "You forgot what we said about the Kyoto ryokan with the onsen bath?")
    after = memory.state(thread)["topics"]
    assert after[parent_id]["status"] == "split"
    woken = [c for c in record["children"] if after[c]["status"] == "active"]
    assert woken, "a recall cue about the divided topic must wake one of its subtopics"
    assert memory.check(thread).ok


def test_topics_lists_the_tree_and_the_map_draws_it(memory: TopicMemory, tmp_path: Path) -> None:
    thread = "trip"
    memory.import_messages(thread, kyoto_history())
    parent_id, record = next(iter(divided(memory, thread).items()))
    listed = {t["id"]: t for t in memory.topics(thread)}
    assert listed[parent_id]["status"] == "split"
    assert listed[parent_id]["children"] == record["children"]
    from langgraph_topics.viz.topic_map import write_topic_map

    target = tmp_path / "map.mmd"
    write_topic_map(target, list(listed.values()), {}, title="trip")
    drawn = target.read_text(encoding="utf-8")
    assert "==>" in drawn  # the parent → subtopic connectors
    assert "split" in drawn


def test_the_review_leaves_a_divided_topic_to_its_subtopics(memory: TopicMemory) -> None:
    thread = "trip"
    memory.import_messages(thread, kyoto_history())
    parents = divided(memory, thread)
    done = memory.review(thread, now="2030-01-01")
    archived = {entry["topic_id"] for entry in done["archived"]}
    assert archived, "everything is years old: the subtopics are archived"
    assert not archived & set(parents)
    after = memory.state(thread)["topics"]
    assert all(after[p]["status"] == "split" for p in parents)
    assert memory.check(thread).ok
    assert memory.review(thread, now="2030-01-01")["archived"] == []


def test_locomo_at_8000_tokens_keeps_every_topic_under_a_quarter(tmp_path: Path) -> None:
    conversation = load_locomo(DATA / "locomo" / "conv-26.json")[0]
    settings = Settings(data_dir=tmp_path / "memory", budget_tokens=8000)  # default limit
    with TopicMemory(settings=settings) as memory:
        memory.import_messages("conv-26", conversation.messages)
        topics = memory.topics("conv-26")
        total = len(conversation.messages)
        assert sum(t["message_count"] for t in topics) > 300  # the rest is the working set
        largest = max(t["message_count"] for t in topics)
        assert largest <= total / 4, f"a topic holds {largest} of {total} messages"
        assert any(t["status"] == "split" for t in topics)
        assert memory.check("conv-26").ok


def test_a_failed_follow_up_write_still_registers_the_division(
    memory: TopicMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    thread = "trip"
    index = memory.services.stores(thread).topic_index
    upsert = index.upsert

    def failing(topic_id: str, name: str, brief: str, *, status: str) -> None:
        if status == "split":
            raise OSError("disk full")
        upsert(topic_id, name, brief, status=status)

    monkeypatch.setattr(index, "upsert", failing)
    memory.import_messages(thread, kyoto_history())
    registry = memory.state(thread)["topics"]
    store = memory.services.stores(thread).topic_store
    for parent_id, record in divided(memory, thread).items():
        # The store holds the division: the registry follows it, whatever failed after.
        assert store.children(parent_id) == record["children"]
        assert all(registry[child]["parent_id"] == parent_id for child in record["children"])
    assert divided(memory, thread)
    assert memory.check(thread).ok


def test_a_topic_the_index_missed_is_indexed_when_the_stores_open_again(
    tmp_path: Path, embedder: UseEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    thread = "trip"
    settings = settings_for(tmp_path)

    def failing(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    # The division is stored; its briefs and index writes all fail.
    with monkeypatch.context() as patch:
        patch.setattr(division, "_follow_up", failing)
        with TopicMemory(settings=settings, embedder=embedder) as first:
            first.import_messages(thread, kyoto_history())
            parents = divided(first, thread)
            children = {c for record in parents.values() for c in record["children"]}
            held = indexed(first, thread)
    # A later split re-indexes the child it adds to; the others stay unindexed.
    assert parents and children - set(held)

    with TopicMemory(settings=settings, embedder=embedder) as second:
        stores = second.services.stores(thread)
        held = indexed(second, thread)
        assert set(stores.topic_store.topic_ids()) <= set(held)
        for topic_id in [*parents, *children]:
            meta = stores.topic_store.meta(topic_id)
            assert held[topic_id][0] == topic_document(meta["name"], meta["brief"])
        found = stores.topic_index.search("Kyoto", k=100, exclude_status=())
        assert children <= {topic_id for topic_id, _ in found}
        assert second.check(thread).ok


def test_an_index_that_cannot_be_mended_on_open_does_not_fail_the_open(
    tmp_path: Path,
    embedder: UseEmbedder,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    thread = "trip"
    settings = settings_for(tmp_path)
    with TopicMemory(settings=settings, embedder=embedder) as first:
        first.import_messages(thread, kyoto_history())
        missing = next(iter(divided(first, thread)))
        first.services.stores(thread).topic_index.remove(missing)

    def read_only(*args: Any, **kwargs: Any) -> None:
        raise OSError("read-only file system")

    monkeypatch.setattr(ChromaTopicIndex, "upsert", read_only)
    with TopicMemory(settings=settings, embedder=embedder) as second:
        with caplog.at_level(logging.WARNING):
            context = second.context(thread, "Which ryokan near Gion had the onsen?")
        assert context["context"]["messages"]
        warning = f"thread {thread}: topic index not mended: OSError: read-only file system"
        assert warning in caplog.text
        assert missing not in indexed(second, thread)


def test_a_registry_that_missed_a_division_follows_the_store(memory: TopicMemory) -> None:
    thread = "trip"
    memory.import_messages(thread, kyoto_history())
    parent_id, record = next(iter(divided(memory, thread).items()))
    # The registry as a checkpoint from before the division would hold it (the store kept it).
    topics = dict(memory.state(thread)["topics"])
    for child in record["children"]:
        topics.pop(child)
    topics[parent_id] = {**record, "status": "active"}
    topics[parent_id].pop("children")
    memory.graph.update_state(memory.run_config(thread), {"topics": topics}, as_node="bookkeeping")
    memory.chat(thread, "Which ryokan near Gion had the onsen?")
    after = memory.state(thread)["topics"]
    assert after[parent_id]["status"] == "split"
    assert after[parent_id]["children"] == record["children"]
    assert all(child in after for child in record["children"])
    assert memory.check(thread).ok


def test_the_native_size_limit_is_on_by_default_and_zero_turns_it_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LANGGRAPH_TOPICS_SUBTOPIC_LIMIT_TOKENS", raising=False)
    assert Settings().subtopic_limit_tokens == DEFAULT_SUBTOPIC_LIMIT_TOKENS
    monkeypatch.setenv("LANGGRAPH_TOPICS_SUBTOPIC_LIMIT_TOKENS", "0")
    assert Settings().subtopic_limit_tokens is None
    monkeypatch.setenv("LANGGRAPH_TOPICS_SUBTOPIC_LIMIT_TOKENS", "6000")
    assert Settings().subtopic_limit_tokens == 6000
    monkeypatch.setenv("LANGGRAPH_TOPICS_SUBTOPIC_LIMIT_TOKENS", "many")
    with pytest.raises(ValueError, match="LANGGRAPH_TOPICS_SUBTOPIC_LIMIT_TOKENS"):
        Settings()
