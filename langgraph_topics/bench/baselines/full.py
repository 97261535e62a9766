"""The full-history baseline: every turn, whatever the budget (the cost a memory avoids)."""

from __future__ import annotations

from collections.abc import Sequence

from langgraph_topics.bench.baselines.base import Selection
from langgraph_topics.bench.corpus import Cost, Turn, total_cost


class FullHistory:
    """All turns; its token count is the history's size, not the budget."""

    name = "full history"

    def __init__(self, turns: Sequence[Turn], cost: Cost) -> None:
        self.selection = Selection(frozenset(t.id for t in turns), total_cost(turns, cost))

    def select(self, question: str, budgets: Sequence[int]) -> dict[int, Selection]:
        """The same selection at every budget."""
        return {budget: self.selection for budget in budgets}
