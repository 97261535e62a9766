"""The memory score of a topic and its tier (seed 004 §2.2–2.4), computed, never stored.

The score is seed 004's stage-2 formula with its weights; the seed scores memory files, so
three of its structural signals are mapped onto what a topic has:

- ``folder_weight`` → where the topic's file lives: 1 for the live topics (active or
  dormant: dormancy only stops the reading, seed 000 §7), 0 once archived
  (``topics/archived/``);
- ``content_type_weight`` → substance: ``min(1, messages / 8)``, so a one-off question and its
  answer weighs 0.25 and a discussion of 8 messages or more weighs 1 (seed 000 §4.8 names
  one-off questions as archive material);
- ``age_days`` → days since the topic was last active, so the decay is a recency decay.

Nothing here is checkpointed: the score follows from the record's counters and the time it is
asked for (a review passes its own ``now``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from langgraph_topics.state.records import TopicRecord

Tier = Literal["core", "essence", "memory-only", "archive"]
TIERS: tuple[Tier, ...] = ("core", "essence", "memory-only", "archive")
"""The tiers, highest first (seed 004 §2.2)."""

CORE_ABOVE = 0.9
ESSENCE_FROM = 0.5
MEMORY_ONLY_FROM = 0.15
"""Tier bounds of seed 004 §2.2: core > 0.9, essence 0.5–0.9, memory-only 0.15–0.5, archive
under 0.15."""

WEIGHTS: dict[str, float] = {
    "recalled": 0.25,
    "searched": 0.10,
    "rating": 0.20,
    "pinned": 0.30,
    "folder": 0.10,
    "content_type": 0.15,
    "recency": 0.10,
    "updated": 0.05,
    "referenced": 0.05,
}
"""Seed 004 §2.4 stage 2: recall_count, search_hit_count, user_rating / 5, pinned,
folder_weight, content_type_weight, exp(-age_days / 90), update_frequency,
cross_reference_count."""

FOLDER_WEIGHTS: dict[str, float] = {"active": 1.0, "dormant": 1.0, "archived": 0.0}
SUBSTANTIVE_MESSAGES = 8
"""Messages from which a topic counts as a discussion rather than a one-off question."""
DEFAULT_DECAY_DAYS = 90.0


@dataclass(frozen=True)
class MemoryScore:
    """A topic's memory score, its tier and what each signal added."""

    score: float
    tier: Tier
    parts: dict[str, float]
    """Each weighted term of the score (keys of :data:`WEIGHTS`), to say why."""


def tier_of(score: float) -> Tier:
    """The tier of a memory score (seed 004 §2.2)."""
    if score > CORE_ABOVE:
        return "core"
    if score >= ESSENCE_FROM:
        return "essence"
    if score >= MEMORY_ONLY_FROM:
        return "memory-only"
    return "archive"


def _days_since(stamp: str, now: datetime) -> float:
    """Whole and fractional days from ``stamp`` to ``now`` (0 for an unreadable stamp)."""
    try:
        then = datetime.fromisoformat(stamp)
    except (TypeError, ValueError):
        return 0.0  # an unreadable time is no evidence of age
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return max(0.0, (now - then).total_seconds() / 86_400)


def memory_score(
    record: TopicRecord, now: datetime, *, decay_days: float = DEFAULT_DECAY_DAYS
) -> MemoryScore:
    """Score a topic for memory value and place it in a tier (seed 004 §2.4 stage 2).

    Args:
        record: The topic as the registry holds it (``TopicState.topics``).
        now: The time to measure recency at (a turn's clock, a review's ``--now``).
        decay_days: The recency decay's constant (``Settings.score_decay_days``).

    Returns:
        The score (unbounded above: the counters enter as ``log1p``), its tier and its terms.

    Example:
        >>> from datetime import datetime, UTC
        >>> record = {"id": "t", "name": "Kyoto trip", "status": "active", "parent_id": None,
        ...           "scores": [], "created_at": "2026-01-01T00:00:00+00:00",
        ...           "last_active_at": "2026-01-01T00:00:00+00:00", "message_count": 12,
        ...           "usage": {"pinned": True}}
        >>> memory_score(record, datetime(2026, 1, 1, tzinfo=UTC)).tier
        'essence'
    """
    recency = math.exp(-_days_since(record["last_active_at"], now) / decay_days)
    parts = {name: round(WEIGHTS[name] * value, 6) for name, value in _signals(record, recency)}
    score = round(sum(parts.values()), 6)
    return MemoryScore(score=score, tier=tier_of(score), parts=parts)


def _signals(record: TopicRecord, recency: float) -> list[tuple[str, float]]:
    """Each signal of the score, unweighted, in the order of :data:`WEIGHTS`."""
    usage = record.get("usage") or {}
    return [
        ("recalled", math.log1p(usage.get("recalled", 0))),
        ("searched", math.log1p(usage.get("searched", 0))),
        ("rating", usage.get("rating", 0) / 5),
        ("pinned", 1.0 if usage.get("pinned") else 0.0),
        ("folder", FOLDER_WEIGHTS.get(record["status"], 0.0)),
        ("content_type", min(1.0, record["message_count"] / SUBSTANTIVE_MESSAGES)),
        ("recency", recency),
        ("updated", math.log1p(usage.get("updated", 0))),
        ("referenced", math.log1p(usage.get("referenced", 0))),
    ]


def score_topics(
    topics: Mapping[str, TopicRecord], now: datetime, *, decay_days: float = DEFAULT_DECAY_DAYS
) -> dict[str, MemoryScore]:
    """Score every topic of a registry at ``now`` (topic id → its score and tier).

    A review passes its own ``now`` and ``decay_days=settings.score_decay_days``.
    """
    return {
        topic_id: memory_score(record, now, decay_days=decay_days)
        for topic_id, record in topics.items()
    }


ROUNDING_MARGIN = 1e-5
"""More than the score's rounding can add: nine parts and their sum, each to 6 places."""


def core_topics(
    topics: Mapping[str, TopicRecord], now: datetime, *, decay_days: float = DEFAULT_DECAY_DAYS
) -> set[str]:
    """Ids of the topics whose memory score puts them in the core tier at ``now``.

    The same answer as scoring each one (``score_topics``), cheaper: the turn's bookkeeping
    asks it of every active topic, every turn, and most topics cannot pass the core bound even
    as recent as can be (recency adds at most its weight), so they are ruled out without
    reading their time or rounding their parts.
    """
    return {
        topic_id
        for topic_id, record in topics.items()
        if _may_be_core(record, decay_days)
        and memory_score(record, now, decay_days=decay_days).tier == "core"
    }


def _may_be_core(record: TopicRecord, decay_days: float) -> bool:
    """Whether the score could pass the core bound with the highest recency (1, or any)."""
    if not decay_days > 0:
        return True  # a negative decay makes old topics count more than new: no bound
    bound = sum(WEIGHTS[name] * value for name, value in _signals(record, 1.0))
    return bound > CORE_ABOVE - ROUNDING_MARGIN


def archive_tier(
    topics: Mapping[str, TopicRecord], now: datetime, decay_days: float = DEFAULT_DECAY_DAYS
) -> set[str]:
    """Ids of the topics whose memory score puts them in the archive tier at ``now``."""
    scored = score_topics(topics, now, decay_days=decay_days)
    return {topic_id for topic_id, score in scored.items() if score.tier == "archive"}
