"""When a scheduled review is due (seed 000 §4.8, §16.3: a daily review at a configured time).

The embedded memory has no scheduler of its own: a thread is reviewed lazily, by the first
turn after the day's review time (``Settings.review_at``). A review is due when the last
scheduled time has passed since the thread's last review; a thread never reviewed is due once
it held topics at that time (a thread with nothing to review is not reviewed). On a LangGraph
server the same review runs as a cron of the ``topic_review`` graph instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, time, timedelta

from langgraph_topics.errors import InputError


def parse_review_at(text: str, setting: str = "review_at") -> time:
    """A daily time, ``HH:MM`` (UTC) or with its offset (``03:00+08:00``).

    Raises:
        InputError: ``text`` is not such a time (one line naming the setting).
    """
    try:
        parsed = time.fromisoformat(text.strip())
    except ValueError:
        raise InputError(
            f"{setting} {text!r}: not a time of day (HH:MM, e.g. 03:00 or 03:00+08:00)"
        ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def last_scheduled(review_at: time, now: datetime) -> datetime:
    """The latest moment at or before ``now`` that the daily ``review_at`` came round."""
    zone = review_at.tzinfo or UTC
    local = now.astimezone(zone)
    today = datetime.combine(local.date(), review_at.replace(tzinfo=None), tzinfo=zone)
    return today if today <= local else today - timedelta(days=1)


def review_due(
    review_at: time,
    now: datetime,
    last_review: str | None,
    topics_created: Iterable[str],
) -> bool:
    """Whether the scheduled review should run now.

    Args:
        review_at: The daily review time.
        now: The time to judge by (the services' clock).
        last_review: When the thread's last review judged (``ReviewRecord["at"]``), if any.
        topics_created: The registered topics' ``created_at`` times (ISO-8601).
    """
    scheduled = last_scheduled(review_at, now)
    if last_review:
        return _moment(last_review) < scheduled
    return any(_moment(created) <= scheduled for created in topics_created if created)


def _moment(text: str) -> datetime:
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
