"""What an archived topic keeps on the shelf: a compressed summary, filed by month (seed 000 §9).

The summary is a structured card (seed 001 T3) of *all* the topic's messages, its text the
topic's brief: the brief is already the topic's compressed description (seed 000 §4.6), and the
card's facts cite the messages, so ``expand`` brings the originals back. The messages
themselves stay in the topic's file (invariant 1), unread by normal activation.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from langgraph_topics.state.records import ArchivedTopic, StoredMessage, TopicMeta
from langgraph_topics.stores.topic_records import day_of
from langgraph_topics.summaries.briefs import brief_card
from langgraph_topics.summaries.native import TokenCounter


def archived_entry(
    meta: TopicMeta,
    messages: Sequence[StoredMessage],
    *,
    reason: str,
    now: datetime,
    count_tokens: TokenCounter,
) -> ArchivedTopic:
    """The shelf entry of a topic archived at ``now`` for ``reason``.

    Filed under the month of its newest dated message (when it was discussed, which is what a
    date query asks about), else of ``now``.
    """
    days = sorted(day for day in (day_of(m.get("timestamp")) for m in messages) if day)
    first_day, last_day = (days[0], days[-1]) if days else (None, None)
    return {
        "topic_id": meta["id"],
        "name": meta["name"],
        "month": (last_day or now.date().isoformat())[:7],
        "first_day": first_day,
        "last_day": last_day,
        "archived_at": now.isoformat(),
        "reason": reason,
        "message_count": len(messages),
        "brief": meta["brief"],
        "summary": brief_card(messages, meta["name"], meta["brief"], count_tokens),
    }
