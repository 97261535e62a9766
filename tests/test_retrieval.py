"""The per-thread retrieval index and the message-level evidence (seed 004 §3)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from conversations import subject_records

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.retrieval.bm25 import BM25, score_documents, tokenize
from langgraph_topics.retrieval.evidence import UNSPLIT_GROUP, EvidenceScorer, Positions
from langgraph_topics.retrieval.lexical import lexical_terms
from langgraph_topics.retrieval.message_index import (
    ENTRIES_FILE,
    VECTORS_FILE,
    MessageIndex,
    OverlayMessageIndex,
    open_message_index,
)
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.embeddings import UseEmbedder
from langgraph_topics.stores.topic_index import topic_document
from langgraph_topics.stores.topic_store import JsonlTopicStore


class CountingEmbedder:
    """The hashing embedder, counting every text it is asked to encode."""

    def __init__(self) -> None:
        self.inner = HashEmbedder()
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return self.inner.embed(texts)


def _said(i: int, text: str, minute: int = 0, day: int = 1) -> StoredMessage:
    return {
        "id": f"m{i}",
        "role": "user" if i % 2 == 0 else "assistant",
        "content": text,
        "timestamp": f"2024-03-{day:02d}T10:{minute:02d}:00",
    }


# --- lexical terms and BM25 ---------------------------------------------------------------------


def test_lexical_terms_stem_english_and_pair_chinese_characters() -> None:
    assert lexical_terms("Dancing classes: she danced!") == ("danc", "class", "danc")
    assert lexical_terms("股票估值") == ("股票", "票估", "估值")
    assert lexical_terms("我 in 2023") == ("我", "2023")
    assert tokenize("股市 rose") == ["股", "市", "rose"]  # the baselines' plain tokenizer


def test_bm25_grown_one_document_at_a_time_equals_one_built_at_once() -> None:
    documents = [lexical_terms(t) for t in ["kyoto ryokan", "sourdough starter", "kyoto train"]]
    grown = BM25()
    for document in documents:
        grown.add(document)
    query = lexical_terms("kyoto trains")
    assert np.allclose(grown.scores(query), BM25(documents).scores(query))
    outside = score_documents(grown, query, [lexical_terms("the kyoto train")])
    assert outside[0] > 0


# --- the index on disk --------------------------------------------------------------------------


def _store_with(root: Path, messages: list[StoredMessage]) -> JsonlTopicStore:
    store = JsonlTopicStore(root)
    topic = store.create_topic("trip", "the trip")
    store.append(topic["id"], messages)
    return store


def test_a_reopened_index_embeds_nothing_again(tmp_path: Path) -> None:
    messages = [_said(i, f"message {i} about the kyoto trip") for i in range(12)]
    store = _store_with(tmp_path / "thread", messages)
    embedder = CountingEmbedder()
    index = open_message_index(tmp_path / "thread" / "retrieval", embedder, store)
    assert len(index) == 12 and len(embedder.texts) == 12  # indexed once, from the store
    before = index.vectors().copy()

    again = CountingEmbedder()
    reopened = open_message_index(tmp_path / "thread" / "retrieval", again, store)
    assert again.texts == []
    assert reopened.ids == index.ids
    assert np.allclose(reopened.vectors(), before, atol=1e-3)  # float16 on disk


def test_a_torn_write_is_cut_and_only_its_messages_are_embedded_again(tmp_path: Path) -> None:
    messages = [_said(i, f"message {i}") for i in range(6)]
    store = _store_with(tmp_path / "thread", messages)
    root = tmp_path / "thread" / "retrieval"
    open_message_index(root, CountingEmbedder(), store)
    # A crash inside the last write: half a vector row, the entries of two messages lost.
    with (root / VECTORS_FILE).open("ab") as handle:
        handle.write(b"\x00" * 7)
    lines = (root / ENTRIES_FILE).read_text("utf-8").splitlines(keepends=True)
    (root / ENTRIES_FILE).write_text("".join(lines[:4]), "utf-8")

    embedder = CountingEmbedder()
    index = open_message_index(root, embedder, store)
    assert index.ids == [m["id"] for m in messages]
    assert len(embedder.texts) == 2
    assert (root / VECTORS_FILE).stat().st_size == 6 * index.vectors().shape[1] * 2


def test_an_index_built_by_another_embedder_is_rebuilt(tmp_path: Path) -> None:
    store = _store_with(tmp_path / "thread", [_said(i, f"message {i}") for i in range(4)])
    root = tmp_path / "thread" / "retrieval"
    open_message_index(root, CountingEmbedder(), store)
    other = HashEmbedder()
    index = open_message_index(root, other, store)
    assert len(index) == 4 and index.vectors().shape == (4, 64)


@pytest.mark.parametrize("dim", [0, -512, "x"])
def test_an_index_whose_meta_has_no_usable_size_is_rebuilt(
    tmp_path: Path, dim: object, caplog: pytest.LogCaptureFixture
) -> None:
    store = _store_with(tmp_path / "thread", [_said(i, f"message {i}") for i in range(4)])
    root = tmp_path / "thread" / "retrieval"
    built = open_message_index(root, CountingEmbedder(), store).vectors().copy()
    meta = json.loads((root / "meta.json").read_text("utf-8"))
    (root / "meta.json").write_text(json.dumps({**meta, "dim": dim}), "utf-8")
    index = open_message_index(root, CountingEmbedder(), store)  # no ZeroDivisionError
    assert "meta.json: unreadable; the index will be rebuilt" in caplog.text
    assert index.ids == [f"m{i}" for i in range(4)]  # embedded again from the store
    assert np.allclose(index.vectors(), built, atol=1e-3)


# --- evidence -----------------------------------------------------------------------------------


def _index(messages: list[StoredMessage], topics: list[str]) -> MessageIndex:
    index = MessageIndex(None, UseEmbedder())
    index.add(messages, topics)
    return index


def test_the_message_that_answers_ranks_first_and_its_reply_follows() -> None:
    messages = [
        _said(0, "I adopted a golden retriever puppy named Biscuit last week!", 0),
        _said(1, "Congrats, that's wonderful news.", 1),
        _said(2, "My sourdough starter smells like acetone.", 0, day=5),
        _said(3, "Feed it twice a day and keep it warm.", 1, day=5),
        _said(4, "We booked a ryokan in Gion for April.", 0, day=9),
        _said(5, "Great, it's close to the station.", 1, day=9),
    ]
    evidence = EvidenceScorer(UseEmbedder()).score(
        _index(messages, ["pets", "pets", "bread", "bread", "trip", "trip"]),
        "What is the name of the dog?",
        [],
    )
    assert evidence.ranked([m["id"] for m in messages])[0] == "m0"
    assert evidence.rank_of("m0") == 0
    # The reply to the answer is helped by its neighbour: it beats the other topics' replies.
    assert evidence.relevance_of("m1") > evidence.relevance_of("m3")
    assert evidence.relevance_of("m1") > evidence.relevance_of("m5")
    assert 0.0 <= evidence.relevance_of("m0") <= 1.0
    assert evidence.group_of(evidence.top(1)[0]) == "pets"


def test_unsplit_and_dry_run_messages_are_scored_with_the_indexed_ones() -> None:
    base = _index([_said(0, "We booked a ryokan in Gion.")], ["trip"])
    overlay = OverlayMessageIndex(base)
    overlay.add([_said(1, "The marathon is on Sunday in Osaka.")], ["sport"])
    unsplit = [_said(2, "What shoes for the marathon?"), _said(3, "Any light trainers.")]
    evidence = EvidenceScorer(UseEmbedder()).score(overlay, "Where is the marathon?", unsplit)
    assert set(evidence.position) == {"m0", "m1", "m2", "m3"}
    assert evidence.ranked(["m0", "m1"]) == ["m1", "m0"]
    assert evidence.group_of(evidence.position["m2"]) == UNSPLIT_GROUP
    assert len(base) == 1  # the dry run left the stored index alone


def test_positions_ignore_ids_indexed_after_the_scores() -> None:
    base = {"a": 0, "b": 1, "late": 2}
    positions = Positions(base, 2, {"u": 2})
    assert "late" not in positions and positions["u"] == 2 and len(positions) == 3
    with pytest.raises(KeyError):
        positions["late"]


# --- the memory -------------------------------------------------------------------------------


def test_a_restarted_memory_embeds_only_the_question(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "m", budget_tokens=600, keep_recent=6)
    records = subject_records(["kyoto", "sourdough", "stocks", "fitness"])
    with TopicMemory(settings=settings, embedder=CountingEmbedder()) as memory:
        memory.import_messages("t", records)
        split = memory.services.stores("t").message_index
        assert len(split) > 0
    embedder = CountingEmbedder()
    with TopicMemory(settings=settings, embedder=embedder) as memory:
        report = memory.context("t", "Which ryokan did we book in Kyoto?")
        assert report["context"]["tokens"] <= 600
        indexed = set(memory.services.stores("t").message_index.ids)
    history = {m["content"] for m in records if m["id"] in indexed}
    assert not history & {text.split(": ", 1)[-1] for text in embedder.texts}


def test_a_restarted_memory_takes_the_briefs_vectors_from_the_topic_index(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "m", budget_tokens=600, keep_recent=6)
    records = subject_records(["kyoto", "sourdough", "stocks", "fitness"])
    with TopicMemory(settings=settings, embedder=CountingEmbedder()) as memory:
        store = memory.services.stores("t").topic_store
        memory.import_messages("t", records)
        metas = [store.meta(topic_id) for topic_id in store.topic_ids()]
    briefs = {topic_document(meta["name"], meta["brief"]) for meta in metas}
    embedder = CountingEmbedder()
    with TopicMemory(settings=settings, embedder=embedder) as memory:
        report = memory.context("t", "Which ryokan did we book in Kyoto?")
        assert len(report["topic_results"]) > 1  # windows scored topics, each with its brief
        assert not briefs & set(embedder.texts)
        splits = len(memory.services.stores("t").message_index)
        for turn in range(12):  # enough to split again: the splitter compares with the briefs
            memory.chat("t", f"Kyoto or sourdough, question {turn}: what did we settle on?")
        memory.wait_idle("t")
        assert len(memory.services.stores("t").message_index) > splits
    assert not briefs & set(embedder.texts)
