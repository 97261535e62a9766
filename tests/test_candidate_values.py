"""A large index's evidence stores its candidates' values only, and reads as the whole array."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.bench.search import synthetic_messages
from langgraph_topics.retrieval.candidate_values import CandidateValues
from langgraph_topics.retrieval.evidence import EvidenceScorer
from langgraph_topics.retrieval.message_index import MessageIndex
from langgraph_topics.retrieval.projection import LARGE_INDEX


@st.composite
def _values(draw: st.DrawFn) -> tuple[CandidateValues, np.ndarray]:
    total = draw(st.integers(1, 60))
    chosen = draw(st.sets(st.integers(0, total - 1), max_size=total))
    positions = np.asarray(sorted(chosen), dtype=np.int64)
    values = np.asarray(
        draw(st.lists(st.floats(-5, 5), min_size=len(positions), max_size=len(positions))),
        dtype=np.float64,
    )
    floor = draw(st.floats(-10, 10))
    whole = np.full(total, floor)
    whole[positions] = values
    return CandidateValues(positions, values, floor, total), whole


@settings(max_examples=200, deadline=None)
@given(_values(), st.data())
def test_reads_are_those_of_the_whole_array(
    pair: tuple[CandidateValues, np.ndarray], data: st.DataObject
) -> None:
    sparse, whole = pair
    total = len(whole)
    assert len(sparse) == total
    assert np.asarray(sparse).dtype == whole.dtype
    assert np.asarray(sparse).tobytes() == whole.tobytes()
    position = data.draw(st.integers(-total, total - 1))
    assert sparse[position] == whole[position]
    assert sparse[np.int64(position)] == whole[position]
    rows = np.asarray(data.draw(st.lists(st.integers(-total, total - 1), max_size=30)), np.int64)
    assert sparse[rows].tobytes() == whole[rows].tobytes()
    assert sparse[rows.tolist()].tobytes() == whole[rows].tobytes()


def test_a_read_outside_or_by_mask_is_refused_as_the_array_would() -> None:
    sparse = CandidateValues(np.asarray([1, 3], np.int64), np.asarray([0.5, 0.7]), 0.1, 5)
    with pytest.raises(IndexError):
        sparse[5]
    with pytest.raises(IndexError):
        sparse[-6]
    with pytest.raises(IndexError):
        sparse[np.asarray([0, 5])]
    with pytest.raises(TypeError):
        sparse[np.asarray([True, False, True, False, True])]
    with pytest.raises(ValueError):
        CandidateValues(np.asarray([1], np.int64), np.asarray([0.5, 0.7]), 0.1, 5)
    empty = CandidateValues(np.zeros(0, np.int64), np.zeros(0), 0.25, 3)
    assert empty[1] == 0.25 and empty[np.asarray([0, 2])].tolist() == [0.25, 0.25]


def test_a_large_index_ranks_and_reads_as_with_whole_arrays() -> None:
    messages = synthetic_messages(LARGE_INDEX + 500)
    index = MessageIndex(None, HashEmbedder(256))
    index.add(messages, [f"topic-{i // 1_000}" for i in range(len(messages))])
    unsplit = [{**m, "id": f"u{i}"} for i, m in enumerate(synthetic_messages(20, seed=5))]
    evidence = EvidenceScorer(index.embedder).score(index, "kyoto train budget", unsplit)
    assert evidence.candidates is not None
    assert isinstance(evidence.score, CandidateValues)
    score = np.asarray(evidence.score)
    # Every message outside the candidates holds the lowest candidate's score.
    outside = np.setdiff1d(np.arange(len(score)), evidence.candidates)
    assert len(outside) > len(evidence.candidates)
    assert np.all(score[outside] == score[evidence.candidates].min())
    # Ranking reads every score at once; the order is the whole array's, ties as given.
    ids = [m["id"] for m in messages[::37]] + ["u2", "u9"]
    expected = sorted(ids, key=lambda i: -score[evidence.position[i]])
    assert evidence.ranked(ids) == expected
    assert evidence.top(10) == [int(p) for p in np.argsort(-score, kind="stable")[:10]]
    best = evidence.top(1)[0]
    assert evidence.rank_at(best) == 0
    assert evidence.group_of(evidence.position["u2"]) == ""
    assert evidence.group_of(0) == "topic-0"
    assert evidence.group_of(len(evidence.base_codes)) == "" and len(evidence.extra_codes) == 20
