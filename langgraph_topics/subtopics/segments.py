"""Where a large topic is cut into subtopics: contiguous runs of its units, at its lulls.

A topic the splitter kept together is continuous by construction, so asking the splitter again
would keep it whole. Its messages are cut instead where the subject moves most, as TextTiling
does (Hearst, 1997): between two units, the cosine of the mean vector of the few units before
with that of the few after; the lower, the more the subject changed there. A dynamic programme
picks the cuts that keep every part under the size cap with the least similarity cut through,
so a part is as large as it may be and ends where the conversation turned.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from langgraph_topics.state.records import StoredMessage

BLOCK_UNITS = 3
"""Units on each side of a gap whose mean vectors are compared."""
CUT_COST = 0.05
"""Added to every cut, so that among plans of equal similarity the one with fewer parts wins."""
SMALL_PART_COST = 2.0
"""Added for a part under the floor: more than any one cut costs, so a sliver is made only
when nothing else keeps the parts under the cap."""


def gap_similarities(vectors: npt.NDArray[np.float32]) -> list[float]:
    """For each gap between consecutive units, how alike the units around it are (cosine).

    Args:
        vectors: One unit-length row per unit, in order.

    Returns:
        ``len(vectors) - 1`` similarities in [-1, 1].
    """
    count = len(vectors)
    if count < 2:
        return []
    sums = np.vstack([np.zeros((1, vectors.shape[1]), np.float64), np.cumsum(vectors, axis=0)])
    gaps: list[float] = []
    for gap in range(1, count):
        before = sums[gap] - sums[max(0, gap - BLOCK_UNITS)]
        after = sums[min(count, gap + BLOCK_UNITS)] - sums[gap]
        norms = float(np.linalg.norm(before) * np.linalg.norm(after))
        gaps.append(float(before @ after) / norms if norms > 0 else 0.0)
    return gaps


def plan_cuts(sizes: Sequence[int], gaps: Sequence[float], cap: int, floor: int = 0) -> list[int]:
    """The gaps to cut at so that every part stays within ``cap`` tokens, most cheaply.

    Args:
        sizes: Each unit's tokens, in order.
        gaps: The similarity at each gap (``len(sizes) - 1`` of them).
        cap: The most tokens a part may hold; a unit larger than it makes a part alone.
        floor: Parts under this many tokens are avoided (``SMALL_PART_COST``).

    Returns:
        The indices of the units that start a new part, ascending (none: one part).
    """
    count = len(sizes)
    if count == 0:
        return []
    prefix = [0]
    for size in sizes:
        prefix.append(prefix[-1] + size)
    best = [float("inf")] * (count + 1)
    previous = [0] * (count + 1)
    best[0] = 0.0
    for end in range(1, count + 1):
        start = end - 1
        # Parts ending at ``end`` start anywhere back to where the cap allows (at least one
        # unit, even one larger than the cap).
        while True:
            cost = best[start] + (0.0 if start == 0 else gaps[start - 1] + 1.0 + CUT_COST)
            if prefix[end] - prefix[start] < floor:
                cost += SMALL_PART_COST
            if cost < best[end]:
                best[end], previous[end] = cost, start
            if start == 0 or prefix[end] - prefix[start - 1] > cap:
                break
            start -= 1
    cuts: list[int] = []
    end = count
    while end > 0:
        start = previous[end]
        if start > 0:
            cuts.append(start)
        end = start
    return sorted(cuts)


def contiguous_parts(
    units: Sequence[Sequence[StoredMessage]],
    vectors: npt.NDArray[np.float32],
    sizes: Sequence[int],
    cap: int,
) -> list[list[StoredMessage]]:
    """The topic's messages in contiguous parts of at most ``cap`` tokens, cut at its lulls.

    Args:
        units: The topic's inseparable units (``state.units.group_units``), in order.
        vectors: One unit-length vector per unit.
        sizes: Each unit's tokens.
        cap: The most tokens a part may hold; parts under a quarter of it are avoided.
    """
    cuts = plan_cuts(sizes, gap_similarities(vectors), cap, cap // 4)
    bounds = [0, *cuts, len(units)]
    return [
        [message for unit in units[start:end] for message in unit]
        for start, end in zip(bounds, bounds[1:], strict=False)
    ]
