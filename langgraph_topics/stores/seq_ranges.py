"""Which topic-store records a branch of the conversation sees.

The topic store follows the checkpoint (docs/forks-and-check.md). Every record of a
thread's topic store carries a sequence number, unique within the thread. The checkpoint keeps the
ranges of sequence numbers its branch wrote; a read through the store sees those records and no
others. A fork from an earlier checkpoint therefore sees the topics as they were there, and what an
abandoned branch (or a write cut short by a crash) appended stays on disk, unseen.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence

SeqRange = tuple[int, int]
"""``[start, end)`` of sequence numbers."""
SeqRanges = list[SeqRange]
"""Sorted, disjoint, non-adjacent ranges."""


def normalize(ranges: Iterable[Sequence[int]]) -> SeqRanges:
    """Sort and merge ranges (checkpoints hand them back as lists, not tuples).

    Raises:
        ValueError: A range that is not two integers with ``start <= end``.
    """
    cleaned: list[SeqRange] = []
    for pair in ranges:
        if len(pair) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in pair):
            raise ValueError(f"not a [start, end) range of sequence numbers: {pair!r}")
        start, end = int(pair[0]), int(pair[1])
        if start > end:
            raise ValueError(f"range ends before it starts: {pair!r}")
        if start < end:
            cleaned.append((start, end))
    cleaned.sort()
    merged: SeqRanges = []
    for start, end in cleaned:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def with_range(ranges: SeqRanges, start: int, end: int) -> SeqRanges:
    """``ranges`` plus ``[start, end)``."""
    return normalize([*ranges, (start, end)])


def contains(ranges: SeqRanges, seq: int) -> bool:
    """Whether ``seq`` lies in one of the (normalized) ranges."""
    place = bisect_right(ranges, (seq, float("inf"))) - 1
    return place >= 0 and ranges[place][0] <= seq < ranges[place][1]


def covers(ranges: SeqRanges, low: int, high: int) -> bool:
    """Whether every sequence number from ``low`` to ``high`` (inclusive) lies in the ranges."""
    place = bisect_right(ranges, (low, float("inf"))) - 1
    return place >= 0 and ranges[place][0] <= low and high < ranges[place][1]


def as_state(ranges: SeqRanges) -> list[list[int]]:
    """The ranges as the checkpoint stores them (plain lists)."""
    return [[start, end] for start, end in ranges]
