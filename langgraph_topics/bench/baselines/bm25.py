"""BM25 over turns (the index itself lives in :mod:`langgraph_topics.retrieval.bm25`)."""

from __future__ import annotations

from collections.abc import Sequence

from langgraph_topics.bench.baselines.base import RankedTurns
from langgraph_topics.bench.corpus import Cost, Turn
from langgraph_topics.retrieval.bm25 import BM25, tokenize

__all__ = ["BM25", "Bm25Turns", "tokenize"]


class Bm25Turns(RankedTurns):
    """BM25 over single turns."""

    name = "BM25 turns"

    def __init__(self, turns: Sequence[Turn], cost: Cost) -> None:
        super().__init__(turns, cost)
        self.index = BM25([tokenize(turn.text) for turn in self.turns])

    def order(self, question: str) -> list[int]:
        """Turns by BM25 score."""
        return self.index.order(tokenize(question))
