"""BM25's per-term weights, kept between queries: the scores of a fresh index, exactly."""

from __future__ import annotations

import random

import numpy as np
import pytest

from langgraph_topics.retrieval import bm25
from langgraph_topics.retrieval.bm25 import BM25

WORDS = "kyoto train budget guitar lesson passport bread starter piano rent".split()


def _documents(seed: int, count: int) -> list[list[str]]:
    chooser = random.Random(seed)
    return [chooser.choices(WORDS, k=chooser.randint(1, 12)) for _ in range(count)]


@pytest.mark.parametrize("budget", [bm25.WEIGHT_CACHE_VALUES, 50])
def test_kept_weights_score_as_a_fresh_index_does_as_documents_join(
    budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bm25, "WEIGHT_CACHE_VALUES", budget)  # 50: terms keep being dropped
    documents = _documents(1, 400)
    kept = BM25(documents[:300])
    queries = [random.Random(n).choices(WORDS, k=4) for n in range(6)] + [["unknown"], []]
    for step in range(3):
        fresh = BM25(documents[: kept.count])
        for query in queries * 2:  # the second pass answers from the kept weights
            assert np.array_equal(kept.scores(query), fresh.scores(query))
        for document in documents[300 + 30 * step : 330 + 30 * step]:
            kept.add(document)
    assert kept._weights, "nothing was kept"
    if budget == 50:  # only the newest term outlives a budget smaller than one term
        assert len(kept._weights) == 1
