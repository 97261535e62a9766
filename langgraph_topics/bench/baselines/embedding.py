"""Embedding retrieval over turns with the topic index's own embedding function."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from langgraph_topics.bench.baselines.base import RankedTurns
from langgraph_topics.bench.corpus import Cost, Turn
from langgraph_topics.stores.protocols import Embedder


class EmbeddingTurns(RankedTurns):
    """Turns by cosine similarity to the question (vectors are unit length).

    Args:
        turns: The conversation's turns.
        cost: The shared token estimate.
        embedder: The same embedder the topic index uses (multilingual USE by default).
    """

    name = "embedding turns"

    def __init__(self, turns: Sequence[Turn], cost: Cost, embedder: Embedder) -> None:
        super().__init__(turns, cost)
        self.embedder = embedder
        self.matrix = np.asarray(embedder.embed([t.text for t in self.turns]), dtype=np.float32)

    def order(self, question: str) -> list[int]:
        """Turns by cosine; ties in conversation order."""
        query = np.asarray(self.embedder.embed([question])[0], dtype=np.float32)
        return [int(i) for i in np.argsort(-(self.matrix @ query), kind="stable")]
