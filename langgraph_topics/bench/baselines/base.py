"""What a baseline returns, and the shared shape of the turn-ranking baselines."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from langgraph_topics.bench.corpus import Cost, Turn
from langgraph_topics.bench.packing import pack


@dataclass(frozen=True)
class Selection:
    """The turns a baseline puts in the window at one budget, and what they cost."""

    ids: frozenset[str]
    tokens: float


class Baseline(Protocol):
    """Picks the turns of one conversation for a question, at each budget."""

    name: str

    def select(self, question: str, budgets: Sequence[int]) -> dict[int, Selection]:
        """The selection at every budget."""
        ...


class RankedTurns:
    """A baseline that ranks turns and packs them best first; subclasses define ``order``.

    Args:
        turns: The conversation's turns, in order.
        cost: The token estimate every baseline and the native back end share.
    """

    name = "ranked turns"

    def __init__(self, turns: Sequence[Turn], cost: Cost) -> None:
        self.turns = list(turns)
        self.costs = [cost(turn.text) for turn in self.turns]

    def order(self, question: str) -> list[int]:
        """Turn indices, best first."""
        raise NotImplementedError

    def select(self, question: str, budgets: Sequence[int]) -> dict[int, Selection]:
        """Rank once, then pack the ranking into each budget."""
        order = self.order(question)
        selections: dict[int, Selection] = {}
        for budget in budgets:
            chosen, used = pack(order, self.costs, budget)
            selections[budget] = Selection(frozenset(self.turns[i].id for i in chosen), used)
        return selections
