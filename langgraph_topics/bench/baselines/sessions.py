"""BM25 over whole sessions: retrieve a session, put all of its turns in the window."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from langgraph_topics.bench.baselines.base import Selection
from langgraph_topics.bench.baselines.bm25 import BM25, tokenize
from langgraph_topics.bench.corpus import Cost, Turn
from langgraph_topics.bench.packing import pack


class Bm25Sessions:
    """Sessions ranked by BM25 on their concatenated turns, packed whole.

    A session that does not fit is skipped for a smaller one further down the ranking.

    Args:
        turns: The conversation's turns, in order.
        cost: The shared token estimate (a session costs the sum of its turns).
    """

    name = "BM25 sessions"

    def __init__(self, turns: Sequence[Turn], cost: Cost) -> None:
        self.sessions = [list(group) for _, group in groupby(turns, key=lambda t: t.session)]
        self.costs = [sum(cost(t.text) for t in session) for session in self.sessions]
        self.index = BM25([tokenize(" ".join(t.text for t in s)) for s in self.sessions])

    def select(self, question: str, budgets: Sequence[int]) -> dict[int, Selection]:
        """Whole sessions by BM25 score at each budget."""
        order = self.index.order(tokenize(question))
        selections: dict[int, Selection] = {}
        for budget in budgets:
            chosen, used = pack(order, self.costs, budget)
            ids = frozenset(t.id for i in chosen for t in self.sessions[i])
            selections[budget] = Selection(ids, used)
        return selections
