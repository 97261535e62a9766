"""The evidence kept between turns is the evidence computed afresh, bit for bit.

The scorer keeps the unsplit messages' rows from one turn to the next (``retrieval/
unsplit_rows.py``), scores their BM25 from kept term counts (``OutsideTerms``), and the large
route probes its clusters in place: each must give the arrays the plain computation gives.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.bench.search import synthetic_messages
from langgraph_topics.retrieval import unsplit_rows
from langgraph_topics.retrieval.bm25 import BM25, OutsideTerms, score_documents
from langgraph_topics.retrieval.evidence import Evidence, EvidenceScorer, _around
from langgraph_topics.retrieval.message_index import MessageIndex
from langgraph_topics.retrieval.projection import LARGE_INDEX, Projection, best_positions
from langgraph_topics.state.records import StoredMessage


def _same(left: npt.ArrayLike, right: npt.ArrayLike) -> bool:
    # A large index's values are the candidates' only: compared as the arrays they stand for.
    left, right = np.asarray(left), np.asarray(right)
    return (
        left.dtype == right.dtype
        and left.shape == right.shape
        and (left.tobytes() == right.tobytes())
    )


def _assert_same_evidence(kept: Evidence, fresh: Evidence) -> None:
    for field in ("query_vector", "base_codes", "extra_codes", "score", "relevance", "dense"):
        assert _same(getattr(kept, field), getattr(fresh, field)), field
    assert (kept.candidates is None) == (fresh.candidates is None)
    if kept.candidates is not None and fresh.candidates is not None:
        assert _same(kept.candidates, fresh.candidates)
    assert kept.group_names == fresh.group_names
    assert dict(kept.position.items()) == dict(fresh.position.items())


def _index(count: int) -> MessageIndex:
    index = MessageIndex(None, HashEmbedder())
    messages = synthetic_messages(count)
    index.add(messages, [f"topic-{i // 90}" for i in range(count)])
    return index


def test_kept_rows_score_as_a_fresh_scorer_while_the_unsplit_list_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    index = _index(400)
    stream: list[StoredMessage] = [
        {**m, "id": f"u{i}"} for i, m in enumerate(synthetic_messages(80, seed=11))
    ]
    computed: list[int] = []
    compute = unsplit_rows.UnsplitRowsCache._computed

    def counted(
        self: unsplit_rows.UnsplitRowsCache,
        messages: Sequence[StoredMessage],
        vocabulary: dict[str, int],
    ) -> unsplit_rows.UnsplitRows:
        if self is scorer.unsplit:  # not the fresh scorers'
            computed.append(len(messages))
        return compute(self, messages, vocabulary)

    monkeypatch.setattr(unsplit_rows.UnsplitRowsCache, "_computed", counted)
    scorer = EvidenceScorer(HashEmbedder())
    words = "kyoto train budget wedding guitar lesson friday passport".split()
    rng = random.Random(3)
    first, last = 0, 20
    other_branch: list[StoredMessage] = [
        {**m, "id": f"b{i}"} for i, m in enumerate(synthetic_messages(12, seed=12))
    ]

    def turn(unsplit: Sequence[StoredMessage]) -> None:
        query = " ".join(rng.choice(words) for _ in range(rng.randint(0, 4)))
        kept = scorer.score(index, query, unsplit)
        fresh = EvidenceScorer(HashEmbedder()).score(index, query, unsplit)
        _assert_same_evidence(kept, fresh)

    for step in range(30):
        edited = False
        if step % 7 == 6:
            # A split files the list's head under a topic: the list loses it, the index gains it.
            index.add(stream[first : first + 6], ["topic-split"] * 6)
            first += 6
        elif step % 11 == 5:
            # A message keeps its id but not its text (an edit), in the middle of the list.
            middle = (first + last) // 2
            stream[middle] = {**stream[middle], "content": f"edited {step}: passport kyoto"}
            edited = True
        elif step % 13 == 9:
            computed.clear()
            turn(other_branch)  # another thread's list in between
            turn(other_branch)
            assert computed == [len(other_branch)]  # then kept
        last = min(last + 2, len(stream))
        computed.clear()
        turn(stream[first:last])
        if edited:
            assert computed == [last - first]  # an edited message: nothing kept is reused
        elif step:
            assert computed[-1:] == [2], computed  # only the new exchange was computed
    assert first > 0 and last == len(stream)
    turn(stream[first : last - 1])  # the list loses its last message
    turn([])


def test_a_large_index_keeps_its_evidence_bit_for_bit_across_turns_and_a_split() -> None:
    index = MessageIndex(None, HashEmbedder(128))
    messages = synthetic_messages(LARGE_INDEX + 1_000)
    index.add(messages, [f"topic-{i // 1_000}" for i in range(len(messages))])
    stream: list[StoredMessage] = [
        {**m, "id": f"u{i}"} for i, m in enumerate(synthetic_messages(30, seed=13))
    ]
    scorer = EvidenceScorer(HashEmbedder(128))
    first = 0
    for step, query in enumerate(["kyoto train", "guitar lesson friday", "passport", "budget"]):
        if step == 2:
            index.add(stream[:4], ["topic-split"] * 4)  # a split: the codes array changes
            first = 4
        unsplit = stream[first : 10 + 2 * step]
        kept = scorer.score(index, query, unsplit)
        assert kept.candidates is not None  # the large route
        _assert_same_evidence(kept, EvidenceScorer(HashEmbedder(128)).score(index, query, unsplit))


def test_outside_terms_score_as_score_documents_bit_for_bit() -> None:
    rng = random.Random(5)
    vocabulary = [f"w{i}" for i in range(40)]

    def document() -> list[str]:
        return [rng.choice(vocabulary) for _ in range(rng.randint(0, 25))]

    documents = [document() for _ in range(60)]
    for index in (BM25([document() for _ in range(300)]), BM25()):
        ids: dict[str, int] = {}
        head = OutsideTerms.of(documents[:35], ids)
        joined = head.after(10, OutsideTerms.of(documents[35:], ids))
        for _ in range(40):
            query = [rng.choice([*vocabulary, "absent"]) for _ in range(rng.randint(0, 8))]
            query += query[:2]  # a repeated term counts again
            expected = score_documents(index, query, documents)
            assert _same(OutsideTerms.of(documents, dict(ids)).scores(index, query), expected)
            assert _same(joined.scores(index, query), score_documents(index, query, documents[10:]))
        assert not len(OutsideTerms.of([], {}).scores(index, ["w1"]))


def _nearest_by_cluster(
    projection: Projection, query: npt.NDArray[np.float32], count: int
) -> npt.NDArray[np.int64]:
    """``Projection.nearest`` as first written: one array per probed cluster, joined."""
    along = (projection.axes.T @ query).astype(np.float32)
    lists = projection.lists
    centres = np.sort(best_positions(projection.centroids @ along, 64))
    rows = [lists.order[lists.starts[c] : lists.starts[c + 1]] for c in centres]
    dots = [lists.shadows[lists.starts[c] : lists.starts[c + 1]] @ along for c in centres]
    rows.append(np.arange(lists.listed, len(projection.shadows), dtype=np.int64))
    dots.append(projection.shadows[lists.listed :] @ along)
    found = np.concatenate(rows)
    if len(found) <= count:
        return np.sort(found)
    return found[best_positions(np.concatenate(dots), count)]


def test_the_clusters_are_probed_in_place_as_one_array_each() -> None:
    rng = np.random.default_rng(9)
    vectors = rng.standard_normal((LARGE_INDEX + 3_000, 80)).astype(np.float32)
    projection = Projection.fitted(vectors[:LARGE_INDEX]).grown(vectors)
    assert projection.lists.listed < len(projection.shadows)  # some rows are not listed yet
    for _ in range(10):
        query = rng.standard_normal(80).astype(np.float32)
        for count in (400, 10**6):
            assert _same(
                projection.nearest(query, count), _nearest_by_cluster(projection, query, count)
            )


def test_rows_around_are_those_of_every_shifted_copy_sorted() -> None:
    rng = np.random.default_rng(2)
    for count in (1, 7, 1_000):
        for size in (0, 1, 5, 300):
            rows = np.unique(rng.integers(0, count, size)).astype(np.int64)
            shifted = np.concatenate([rows + step for step in range(-2, 3)])
            expected = np.unique(shifted[(shifted >= 0) & (shifted < count)]).astype(np.int64)
            assert _same(_around(rows, 2, count), expected)
