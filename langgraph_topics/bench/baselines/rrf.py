"""Reciprocal-rank fusion of BM25 and embedding rankings (Cormack et al., 2009)."""

from __future__ import annotations

from collections.abc import Sequence

from langgraph_topics.bench.baselines.base import RankedTurns
from langgraph_topics.bench.baselines.bm25 import Bm25Turns
from langgraph_topics.bench.baselines.embedding import EmbeddingTurns
from langgraph_topics.bench.corpus import Cost, Turn

RRF_K = 60


def reciprocal_rank_fusion(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[int]:
    """Fuse rankings by ``Σ 1 / (k + rank)`` (rank from 1); ties by the smaller index.

    Args:
        rankings: Each a list of item indices, best first.
        k: The fusion constant (60 in the original paper and in the reference figures).

    Returns:
        Every item of any ranking, best fused score first.
    """
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda item: (-scores[item], item))


def with_neighbours(order: Sequence[int], turns: Sequence[Turn], radius: int = 1) -> list[int]:
    """Follow each hit by its neighbouring turns of the same session (an answer, a question).

    Args:
        order: Turn indices, best first.
        turns: The conversation's turns (to keep neighbours inside the hit's session).
        radius: How many turns on each side.

    Returns:
        The expanded ranking without repeats.
    """
    expanded: dict[int, None] = {}
    for hit in order:
        expanded.setdefault(hit)
        for offset in range(1, radius + 1):
            for neighbour in (hit - offset, hit + offset):
                if 0 <= neighbour < len(turns) and turns[neighbour].session == turns[hit].session:
                    expanded.setdefault(neighbour)
    return list(expanded)


class RrfTurns(RankedTurns):
    """BM25 and embedding rankings fused by RRF (k = 60), optionally with neighbours.

    Args:
        bm25: The BM25 baseline over the same turns.
        embedding: The embedding baseline over the same turns.
        cost: The shared token estimate.
        neighbours: Follow each hit by its neighbouring turns.
    """

    def __init__(
        self, bm25: Bm25Turns, embedding: EmbeddingTurns, cost: Cost, *, neighbours: bool = False
    ) -> None:
        super().__init__(bm25.turns, cost)
        self.bm25 = bm25
        self.embedding = embedding
        self.neighbours = neighbours
        self.name = "RRF + neighbours" if neighbours else "BM25 + embedding RRF"

    def order(self, question: str) -> list[int]:
        """The fused ranking (expanded by neighbours when asked)."""
        fused = reciprocal_rank_fusion([self.bm25.order(question), self.embedding.order(question)])
        return with_neighbours(fused, self.turns) if self.neighbours else fused
