"""Which topics a review archives (seed 000 §4.8, §7): long dormant ones and one-off questions.

A topic is archived when it has not been activated (``last_active_at``) for more than
``Settings.archive_after_days`` (7), whatever its last status: a topic nobody touched for a
week is dormant in the seed's sense even if it was active in that week-old last turn. A one-off
question (at most ``one_off_messages`` messages, one of them the user's) goes after
``one_off_after_days`` (1). A dormant topic of low importance (its memory score in seed 004's
archive tier, ``scoring``) goes too. An :class:`ArchiveGuard` may keep a topic whatever the
criteria say; without one, :class:`TierGuard` keeps pinned and core-tier topics.

These pick the candidates; the seed's second criterion, "unrelated to the current active
discussion", must hold as well (``review.relatedness``, applied by the archive step, which has
the embedder): (dormant or one-off or unimportant) AND unrelated. The first three say a topic
is not needed, the last that it will not be needed soon; an archived topic leaves normal
activation, so archiving one the conversation is close to would hide it when it is wanted.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from langgraph_topics.scoring import memory_score
from langgraph_topics.settings import Settings
from langgraph_topics.state.records import StoredMessage, TopicRecord
from langgraph_topics.stores.topic_records import parse_time

SECONDS_PER_DAY = 86_400


@runtime_checkable
class ArchiveGuard(Protocol):
    """The seam for the memory score and tiers (seed 004 §2; issue 11 item 3).

    The review asks it about every topic its criteria would archive; a reason it returns keeps
    the topic (a pinned or ``core`` topic, say). The review has none by default: pass one as
    ``ReviewContext.archive_guard`` (``TopicMemory.review(..., archive_guard=...)``).
    """

    def keeps(self, topic: TopicRecord, now: datetime) -> str | None:
        """Why ``topic`` must stay unarchived at ``now``, or None to let the criteria decide."""
        ...


class TierGuard:
    """The review's default guard: pinned topics and core-tier ones are never archived.

    Seed 004 §2.2 keeps core memories loaded at all times, and a pin is the user saying so.

    Args:
        decay_days: The memory score's recency constant (``Settings.score_decay_days``).
    """

    def __init__(self, decay_days: float) -> None:
        self.decay_days = decay_days

    def keeps(self, topic: TopicRecord, now: datetime) -> str | None:
        """Why ``topic`` stays: pinned, or core tier; None to let the criteria decide."""
        if (topic.get("usage") or {}).get("pinned"):
            return "pinned"
        importance = memory_score(topic, now, decay_days=self.decay_days)
        if importance.tier == "core":
            return f"core tier (memory score {importance.score:.2f})"
        return None


def idle_days(topic: TopicRecord, now: datetime) -> float:
    """Days since the topic was last activated (0 when that time is unreadable)."""
    last = parse_time(topic["last_active_at"])
    if last is None:
        return 0.0
    return max(0.0, (now - last).total_seconds() / SECONDS_PER_DAY)


def is_one_off(messages: Sequence[StoredMessage], settings: Settings) -> bool:
    """A question asked once and answered: few messages, a single one of them the user's."""
    users = sum(1 for message in messages if message["role"] == "user")
    return len(messages) <= settings.one_off_messages and users <= 1


def archive_reason(
    topic: TopicRecord,
    messages: Sequence[StoredMessage] | None,
    now: datetime,
    settings: Settings,
) -> str | None:
    """Why the criteria archive ``topic`` at ``now``, or None.

    Args:
        topic: The registry record.
        messages: The topic's messages when it is small enough to be a one-off question
            (``Settings.one_off_messages``); None otherwise.
        now: The time the review judges by.
        settings: The thresholds.
    """
    if topic["status"] in ("archived", "split"):  # a divided topic goes with its subtopics
        return None
    days = idle_days(topic, now)
    if days > settings.archive_after_days:
        return f"dormant {days:.0f} days (over {settings.archive_after_days:g})"
    if messages is not None and is_one_off(messages, settings):
        if days > settings.one_off_after_days:
            return f"one-off question, idle {days:.1f} days"
    if topic["status"] == "dormant":
        importance = memory_score(topic, now, decay_days=settings.score_decay_days)
        if importance.tier == "archive":
            return f"low importance: memory score {importance.score:.3f} (archive tier)"
    return None
