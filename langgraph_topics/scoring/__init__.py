"""Memory scores and tiers of topics (seed 004 §2): usage counters, user signals, the score.

What a review or any other reader needs is :func:`memory_score` (one topic record and a time in,
a :class:`MemoryScore` with its :data:`Tier` out) or :func:`score_topics` (a whole registry);
pass ``decay_days=settings.score_decay_days``. The counters themselves are kept in the topic
registry (``TopicRecord.usage``) by the turn's bookkeeping.
"""

from langgraph_topics.scoring.memory_score import (
    TIERS,
    WEIGHTS,
    MemoryScore,
    Tier,
    archive_tier,
    core_topics,
    memory_score,
    score_topics,
    tier_of,
)
from langgraph_topics.scoring.usage import merged_usage, turn_counts, with_counts
from langgraph_topics.scoring.user_signals import check_rating, with_signal

__all__ = [
    "TIERS",
    "WEIGHTS",
    "MemoryScore",
    "Tier",
    "archive_tier",
    "check_rating",
    "core_topics",
    "memory_score",
    "merged_usage",
    "score_topics",
    "tier_of",
    "turn_counts",
    "with_counts",
    "with_signal",
]
