"""The retrieval index's lexical files: opening a thread reads them, never its text."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.retrieval.bm25 import BM25
from langgraph_topics.retrieval.lexical import lexical_terms
from langgraph_topics.retrieval.lexical_files import (
    DOCUMENTS_FILE,
    LEXICON_FILE,
    POSTINGS_FILE,
    LexicalFiles,
)
from langgraph_topics.retrieval.message_index import open_message_index
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.topic_store import JsonlTopicStore

_WORDS = st.sampled_from(["kyoto", "train", "bread", "股票", "估值", "2023", "rent", "dog"])


@settings(max_examples=30, deadline=None)
@given(
    documents=st.lists(st.lists(_WORDS, max_size=8), max_size=40),
    later=st.lists(st.lists(_WORDS, max_size=8), max_size=10),
    query=st.lists(_WORDS, min_size=1, max_size=4),
)
def test_an_index_loaded_from_columns_scores_as_one_grown_by_hand(
    tmp_path_factory: object,
    documents: list[list[str]],
    later: list[list[str]],
    query: list[str],
) -> None:
    root = Path(tmp_path_factory.mktemp("lexical"))  # type: ignore[attr-defined]
    LexicalFiles(root).append(documents[: len(documents) // 2])
    LexicalFiles(root).append(documents[len(documents) // 2 :])
    columns = LexicalFiles(root).load(len(documents))
    loaded = BM25.from_columns(
        columns.term_id, columns.term_ids, columns.frequencies, columns.pair_counts
    )
    by_hand = BM25(documents)
    for document in later:
        loaded.add(document)
        by_hand.add(document)
    assert loaded.count == by_hand.count
    assert np.allclose(loaded.scores([*query, "absent"]), by_hand.scores([*query, "absent"]))


class RecordingStore(JsonlTopicStore):
    """A topic store that records every lookup of message texts."""

    looked_up: list[str]

    def get_messages(self, message_ids: Sequence[str]) -> dict[str, StoredMessage]:
        self.looked_up.extend(message_ids)
        return super().get_messages(message_ids)


def _thread(root: Path, count: int) -> RecordingStore:
    store = RecordingStore(root)
    store.looked_up = []
    topic = store.create_topic("trip", "kyoto")["id"]
    store.append(
        topic,
        [
            {
                "id": f"m{i}",
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"message {i} about the kyoto train and 股票估值 {i % 3}",
            }
            for i in range(count)
        ],
    )
    return store


def _reference_scores(store: JsonlTopicStore, ids: Sequence[str], query: str) -> np.ndarray:
    texts = store.get_messages(ids)
    return BM25(lexical_terms(texts[i]["content"]) for i in ids).scores(lexical_terms(query))


def test_reopening_reads_no_message_text(tmp_path: Path) -> None:
    store = _thread(tmp_path, 30)
    root = tmp_path / "retrieval"
    open_message_index(root, HashEmbedder(), store)  # indexes the 30 messages from the store
    store.looked_up.clear()
    reopened = open_message_index(root, HashEmbedder(), store)
    assert store.looked_up == []
    query = "kyoto train 估值"
    assert np.allclose(
        reopened.lexical.scores(lexical_terms(query)),
        _reference_scores(store, reopened.ids, query),
    )


def test_an_index_without_lexical_files_gets_them_once(tmp_path: Path) -> None:
    store = _thread(tmp_path, 12)
    root = tmp_path / "retrieval"
    open_message_index(root, HashEmbedder(), store)
    for name in (LEXICON_FILE, POSTINGS_FILE, DOCUMENTS_FILE):
        (root / name).unlink()  # an index written before the lexical files existed
    store.looked_up.clear()
    index = open_message_index(root, HashEmbedder(), store)
    assert sorted(store.looked_up) == sorted(index.ids)  # completed from the text once
    store.looked_up.clear()
    again = open_message_index(root, HashEmbedder(), store)
    assert store.looked_up == []
    assert np.allclose(
        again.lexical.scores(lexical_terms("kyoto 股票")),
        _reference_scores(store, again.ids, "kyoto 股票"),
    )


def test_torn_lexical_writes_are_cut_and_completed(tmp_path: Path) -> None:
    store = _thread(tmp_path, 10)
    root = tmp_path / "retrieval"
    open_message_index(root, HashEmbedder(), store)
    # A crash in the middle of the next write: a torn term, half a pair, a stray count.
    with (root / LEXICON_FILE).open("ab") as handle:
        handle.write("半".encode()[:2])
    with (root / POSTINGS_FILE).open("ab") as handle:
        handle.write(b"\x01\x00\x00\x00\x02")
    with (root / DOCUMENTS_FILE).open("ab") as handle:
        handle.write(b"\x05\x00\x00\x00")
    index = open_message_index(root, HashEmbedder(), store)
    assert index.lexical.count == 10
    assert (root / LEXICON_FILE).read_bytes().endswith(b"\n")
    assert (root / DOCUMENTS_FILE).stat().st_size == 10 * 4
    # The next write appends cleanly after the cut.
    late: StoredMessage = {"id": "late", "role": "user", "content": "a brand new word: 半导体"}
    topic = store.topic_ids()[0]
    store.append(topic, [late])
    index.add([late], [topic])
    reopened = open_message_index(root, HashEmbedder(), store)
    assert reopened.lexical.count == 11
    assert reopened.lexical.scores(lexical_terms("半导体"))[-1] > 0
