"""Below ``LARGE_INDEX`` every evidence score is the exact formula's, bit for bit.

The recall figures (``benchmarks/README.md``) were measured on conversations of at most 700
messages, all on this route. The reference below is the formula as it stood when they were
measured, written out on its own (whole-thread standardisation, both neighbours, the mean of
each group's three best, the subtopic families' half share), so a change to the large-index
route that leaked into the small one would fail here, not in a recall run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
import pytest

from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.bench.search import synthetic_messages
from langgraph_topics.retrieval.bm25 import score_documents
from langgraph_topics.retrieval.evidence import (
    RELEVANCE_CENTRE,
    UNSPLIT_GROUP,
    Evidence,
    EvidenceScorer,
)
from langgraph_topics.retrieval.lexical import lexical_terms
from langgraph_topics.retrieval.message_index import (
    MessageIndex,
    OverlayMessageIndex,
    message_time,
)
from langgraph_topics.retrieval.projection import LARGE_INDEX
from langgraph_topics.retrieval.row_dots import row_dots
from langgraph_topics.roles.native.text import indexed_text
from langgraph_topics.state.records import StoredMessage

Floats = npt.NDArray[np.float64]


def _standard(values: Floats) -> Floats:
    if len(values) == 0:
        return values
    mean, deviation = float(values.mean()), float(values.std())
    return (values - mean) / deviation if deviation > 0 else np.zeros_like(values)


def _neighbour(scores: Floats, stamps: Floats, gap: float) -> Floats:
    count = len(scores)
    if count < 2:
        return np.zeros(count)
    together = ~(np.abs(np.diff(stamps)) > gap)
    previous = np.full(count, -np.inf)
    following = np.full(count, -np.inf)
    previous[1:] = np.where(together, scores[:-1], -np.inf)
    following[:-1] = np.where(together, scores[1:], -np.inf)
    best = np.maximum(previous, following)
    return np.where(np.isfinite(best), best, 0.0)


def _prior(scores: Floats, codes: npt.NDArray[np.int64], groups: int) -> Floats:
    means = np.zeros(groups)
    if len(scores) == 0:
        return scores
    order = np.argsort(codes * 1e4 - np.clip(scores, -1e3, 1e3))
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    ends = np.r_[starts[1:], len(order)]
    total = np.zeros(len(starts))
    taken = np.zeros(len(starts))
    for offset in range(3):
        inside = starts + offset < ends
        picks = np.where(inside, starts + offset, 0)
        total += np.where(inside, scores[order[picks]], 0.0)
        taken += inside
    means[sorted_codes[starts]] = total / np.maximum(taken, 1)
    return means[codes]


def _reference(
    index: MessageIndex,
    query: str,
    unsplit: Sequence[StoredMessage],
    families: Mapping[str, str],
    scorer: EvidenceScorer,
) -> tuple[Floats, Floats, Floats]:
    """(score, relevance, cosine) of every message, by the formula the recall figures used."""
    base = index.base if isinstance(index, OverlayMessageIndex) else index
    snap = base.snapshot()
    assert snap.projection is None
    names = list(snap.topic_names)
    vectors: list[npt.NDArray[np.float32]] = []
    terms: list[tuple[str, ...]] = []
    codes = list(snap.codes)
    times = list(snap.times)

    def code(group: str) -> int:
        if group not in names:
            names.append(group)
        return names.index(group)

    if isinstance(index, OverlayMessageIndex):
        view = index.snapshot()
        vectors.extend(view.vectors)
        terms.extend(index.terms)
        codes.extend(code(view.topic_names[c]) for c in view.codes)
        times.extend(view.times)
    texts = [indexed_text(m) or " " for m in unsplit]
    if unsplit:
        vectors.extend(np.asarray(HashEmbedder().embed(texts), np.float32))
        terms.extend(lexical_terms(t) for t in texts)
        codes.extend(code(UNSPLIT_GROUP) for _ in unsplit)
        times.extend(np.nan if message_time(m) is None else message_time(m) for m in unsplit)
    query_vector = np.asarray(HashEmbedder().embed([query or " "])[0], np.float32)
    query_terms = lexical_terms(query)
    dense_parts = [row_dots(snap.vectors, query_vector).astype(np.float64)]
    if vectors:
        dense_parts.append((np.stack(vectors) @ query_vector).astype(np.float64))
    dense = np.concatenate(dense_parts)
    lex = np.concatenate(
        [
            snap.lexical.scores(query_terms)[: snap.count],
            score_documents(snap.lexical, query_terms, terms),
        ]
    )
    code_array = np.asarray(codes, dtype=np.int64)
    own = scorer.dense_weight * _standard(dense) + (1 - scorer.dense_weight) * _standard(lex)
    fused = own + scorer.neighbour_weight * _neighbour(
        own, np.asarray(times, dtype=np.float64), scorer.sitting_gap_seconds
    )
    prior = _prior(own, code_array, len(names))
    if families:
        family_of: dict[str, int] = {}
        remap = np.asarray(
            [family_of.setdefault(families.get(n, n), len(family_of)) for n in names],
            dtype=np.int64,
        )
        prior = 0.5 * prior + 0.5 * _prior(own, remap[code_array], len(family_of))
    fused = fused + scorer.topic_weight * prior
    return fused, 1.0 / (1.0 + np.exp(-(fused - RELEVANCE_CENTRE))), dense


def _same_bits(left: Floats, right: Floats) -> bool:
    return left.dtype == right.dtype and left.tobytes() == right.tobytes()


def _index(count: int) -> MessageIndex:
    messages = synthetic_messages(count)
    index = MessageIndex(None, HashEmbedder())
    for start in range(0, count, 250):
        chunk = messages[start : start + 250]
        index.add(chunk, [f"topic-{(start + i) // 90}" for i in range(len(chunk))])
    return index


QUERIES = ["kyoto train budget wedding", "guitar lesson on Friday?", "passport", ""]


@pytest.mark.parametrize("count", [1, 60, 700, 5_000])
def test_small_indexes_score_bit_for_bit_as_the_exact_formula(count: int) -> None:
    index = _index(count)
    assert len(index) < LARGE_INDEX
    unsplit = [{**m, "id": f"u{i}"} for i, m in enumerate(synthetic_messages(25, seed=4))]
    families = {"topic-1": "topic-0", "topic-2": "topic-0"}
    scorer = EvidenceScorer(HashEmbedder())
    for query in QUERIES:
        for given, family in [([], {}), (unsplit, {}), (unsplit, families)]:
            evidence = scorer.score(index, query, given, family)
            score, relevance, dense = _reference(index, query, given, family, scorer)
            assert evidence.candidates is None
            assert _same_bits(evidence.score, score)
            assert _same_bits(evidence.relevance, relevance)
            assert _same_bits(evidence.dense, dense)


def test_a_dry_run_over_a_small_index_scores_bit_for_bit_as_the_exact_formula() -> None:
    index = _index(700)
    overlay = OverlayMessageIndex(index)
    more = [{**m, "id": f"d{i}"} for i, m in enumerate(synthetic_messages(40, seed=5))]
    overlay.add(more, ["dry"] * len(more))
    unsplit = [{**m, "id": f"u{i}"} for i, m in enumerate(synthetic_messages(10, seed=6))]
    scorer = EvidenceScorer(HashEmbedder())
    evidence: Evidence = scorer.score(overlay, QUERIES[0], unsplit)
    score, relevance, dense = _reference(overlay, QUERIES[0], unsplit, {}, scorer)
    assert _same_bits(evidence.score, score)
    assert _same_bits(evidence.relevance, relevance)
    assert _same_bits(evidence.dense, dense)


def test_bm25_scores_of_some_rows_are_those_of_all_rows_bit_for_bit() -> None:
    index = _index(3_000)
    rows = np.asarray([0, 5, 6, 999, 1_500, 2_999, 3_000, 4_000], dtype=np.int64)
    for query in QUERIES:
        terms = lexical_terms(query) + lexical_terms(query)[:1]  # a repeated term counts again
        whole = index.lexical.scores(terms)
        some = index.lexical.scores_at(terms, rows)
        assert _same_bits(some[:6], whole[rows[:6]])
        assert not some[6:].any()  # past the index
        best = index.lexical.top_documents(terms, 50)
        assert np.all(np.diff(best) > 0)
        if terms:
            # Every term's best document is a candidate.
            for term in set(terms):
                column = index.lexical.scores([term])
                if column.max() > 0:
                    assert (
                        int(np.argmax(column)) in set(best.tolist())
                        or np.sum(column == column.max()) > 50
                    )


def test_a_score_far_under_the_centre_has_relevance_0_without_a_warning() -> None:
    import warnings

    from langgraph_topics.retrieval.evidence import _relevance

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warning would reach a user's console
        relevance = _relevance(np.array([-2000.0, RELEVANCE_CENTRE, 2000.0]))
    assert relevance.tolist() == [0.0, 0.5, 1.0]
