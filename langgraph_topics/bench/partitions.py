"""Partitions of a conversation into topics, the baselines they are held against, and their maths.

A partition maps every message id of a conversation to a block id. The memory's partition has
one block per topic, plus one block for the unsplit tail (messages the splitter has not yet
assigned; they are read whole at every turn, so they count as one more topic). Baselines:

- **one topic per session**: LoCoMo sessions (MemoryBank days) as topics;
- **random, contiguous runs**: the memory's block sizes in a random order laid end to end over
  the conversation in time order: a splitter that cuts at random places but keeps topic sizes;
- **random, scattered**: the memory's block sizes filled with randomly drawn messages: topics
  that ignore time order too;
- **fixed chunks**: runs of a fixed number of messages (20, or 2 for one topic per message
  pair), for the interleaved test (``bench/interleaved.py``).

Both random baselines keep exactly the memory's block-size multiset and are seeded; the
contiguous one is the fair comparison for a splitter that works through time in order, the
scattered one shows how far from chance the contiguous one already is.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean

UNSPLIT = "(unsplit)"
"""Block id of the messages not yet in any topic."""

Partition = Mapping[str, str]
"""Message id → block (topic) id."""


def memory_partition(message_ids: Sequence[str], located: Mapping[str, str]) -> dict[str, str]:
    """The memory's partition: each message's topic, ``UNSPLIT`` for the unassigned tail."""
    return {message_id: located.get(message_id, UNSPLIT) for message_id in message_ids}


def session_partition(message_ids: Sequence[str]) -> dict[str, str]:
    """One block per session, read from LoCoMo turn ids (``"D3:7"`` → ``"D3"``)."""
    return {message_id: message_id.split(":", 1)[0] for message_id in message_ids}


def fixed_chunks(message_ids: Sequence[str], size: int) -> dict[str, str]:
    """Runs of ``size`` messages in order (the last may be shorter): a splitter that only counts.

    Raises:
        ValueError: ``size`` is not positive.
    """
    if size <= 0:
        raise ValueError(f"chunk size must be positive, got {size}")
    return {message_id: f"c{i // size}" for i, message_id in enumerate(message_ids)}


def block_sizes(partition: Partition) -> list[int]:
    """The sizes of the blocks, largest first."""
    return sorted(Counter(partition.values()).values(), reverse=True)


def random_contiguous(
    message_ids: Sequence[str], sizes: Sequence[int], rng: random.Random
) -> dict[str, str]:
    """Blocks of the given sizes, shuffled, laid as contiguous runs over the messages in order."""
    _check_sizes(message_ids, sizes)
    order = list(sizes)
    rng.shuffle(order)
    return _laid_out(message_ids, order)


def random_scattered(
    message_ids: Sequence[str], sizes: Sequence[int], rng: random.Random
) -> dict[str, str]:
    """Blocks of the given sizes, each filled with messages drawn at random (no time order)."""
    _check_sizes(message_ids, sizes)
    shuffled = list(message_ids)
    rng.shuffle(shuffled)
    return _laid_out(shuffled, sizes)


def _laid_out(message_ids: Sequence[str], sizes: Sequence[int]) -> dict[str, str]:
    """Blocks ``r0``, ``r1``… of the given sizes, one after another over ``message_ids``."""
    partition: dict[str, str] = {}
    start = 0
    for block, size in enumerate(sizes):
        for message_id in message_ids[start : start + size]:
            partition[message_id] = f"r{block}"
        start += size
    return partition


def _check_sizes(message_ids: Sequence[str], sizes: Sequence[int]) -> None:
    if sum(sizes) != len(message_ids) or any(size <= 0 for size in sizes):
        raise ValueError(f"sizes {list(sizes)} do not partition {len(message_ids)} messages")


def evidence_spread(evidence: Sequence[str], partition: Partition) -> float | None:
    """``(blocks spanned − 1) / (evidence turns − 1)``; None below two evidence turns.

    0 when every evidence turn sits in one block, 1 when each sits in its own. Turns the
    partition does not hold are ignored (they cannot be spanned).
    """
    turns = [turn for turn in dict.fromkeys(evidence) if turn in partition]
    if len(turns) < 2:
        return None
    spanned = len({partition[turn] for turn in turns})
    return (spanned - 1) / (len(turns) - 1)


def mean_spread(questions: Iterable[Sequence[str]], partition: Partition) -> float | None:
    """The mean evidence spread over the questions with at least two evidence turns."""
    values = [s for q in questions if (s := evidence_spread(q, partition)) is not None]
    return fmean(values) if values else None


def blocks_spanned(message_ids: Iterable[str], partition: Partition) -> int:
    """How many blocks hold at least one of the messages."""
    return len({partition[m] for m in message_ids if m in partition})


@dataclass(frozen=True)
class Shape:
    """Size figures of one partition (the unsplit tail is counted as a message, not a topic)."""

    messages: int
    topics: int
    """Blocks other than ``UNSPLIT``."""
    unsplit: int
    """Messages in no topic yet."""
    largest: int
    """Messages in the largest topic."""
    single: int
    """Topics holding exactly one message."""

    @property
    def per_100(self) -> float:
        """Topics per 100 messages."""
        return 100 * self.topics / self.messages if self.messages else 0.0

    @property
    def largest_share(self) -> float:
        """The largest topic's share of all messages."""
        return self.largest / self.messages if self.messages else 0.0

    @property
    def single_share(self) -> float:
        """The share of topics that hold one message."""
        return self.single / self.topics if self.topics else 0.0


def shape(partition: Partition) -> Shape:
    """Topic count, unsplit tail, largest topic and one-message topics of a partition."""
    counts = Counter(partition.values())
    unsplit = counts.pop(UNSPLIT, 0)
    return Shape(
        messages=len(partition),
        topics=len(counts),
        unsplit=unsplit,
        largest=max(counts.values(), default=0),
        single=sum(1 for size in counts.values() if size == 1),
    )
