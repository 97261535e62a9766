"""The recency baseline: the last turns that fit, what a plain chat window keeps."""

from __future__ import annotations

from langgraph_topics.bench.baselines.base import RankedTurns


class Recency(RankedTurns):
    """Newest turns first."""

    name = "recency"

    def order(self, question: str) -> list[int]:
        """Turn indices from the newest back."""
        return list(range(len(self.turns) - 1, -1, -1))
