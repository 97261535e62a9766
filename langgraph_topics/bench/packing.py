"""Fit ranked items into a token budget, the way every baseline does."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def pack(order: Iterable[int], costs: Sequence[float], budget: float) -> tuple[list[int], float]:
    """Take items in ranked order while they fit; an item that does not fit is skipped.

    Skipping (rather than stopping at the first overflow) lets a short turn ranked after a long
    one still use the remaining budget; on LoCoMo the two rules differ by under 0.002 recall.

    Args:
        order: Item indices, best first (repeats are ignored).
        costs: Token cost of each item.
        budget: Tokens available.

    Returns:
        The chosen indices in ranked order, and the tokens they use.
    """
    chosen: list[int] = []
    seen: set[int] = set()
    used = 0.0
    for index in order:
        if index in seen:
            continue
        seen.add(index)
        if used + costs[index] <= budget:
            chosen.append(index)
            used += costs[index]
    return chosen, used
