"""The time a review judges by: ``--now`` when given, else the thread's own clock.

Dormancy is a gap in the conversation, so a thread ages as it is lived, not as the calendar
turns (issue 36 item 5). The thread's clock reads the time of its latest message; when the
wall clock is later and the thread is **live** (its latest message at most :data:`LIVE_WITHIN`
old) it reads the wall clock. So a conversation imported from 2023 and reviewed at once is
judged as of its own last message, and a thread someone is writing in is judged as of now.
``Settings.review_clock = "wall"`` (``LANGGRAPH_TOPICS_REVIEW_CLOCK=wall``, or ``review
--wall-clock``) ages every thread by the wall clock instead, as the reviews before this did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from langchain_core.messages import BaseMessage

from langgraph_topics.errors import InputError
from langgraph_topics.state.messages import TIMESTAMP_KEY
from langgraph_topics.stores.topic_records import parse_time

ReviewClock = Literal["thread", "wall"]
"""What ages a thread: its own clock, or the wall clock (``Settings.review_clock``)."""

LIVE_WITHIN = timedelta(days=1)
"""A thread whose latest message is at most this old is live: the wall clock ages it.

A day covers the gap the wall clock is for, between an evening's last message and the
nightly review (``Settings.review_at``; ``chat`` reviews after 03:00). A longer silence is the
thread resting, or a history just imported, and a resting thread's topics do not go dormant:
they age again from the moment someone writes in it.
"""


def parse_now(text: str, option: str = "--now") -> datetime:
    """An ISO-8601 date or time (``2030-01-01``, ``2030-01-01T08:00:00+08:00``); naive is UTC.

    Raises:
        InputError: ``text`` is not an ISO-8601 date or time (one line naming it).
    """
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InputError(
            f"{option} {text!r}: not an ISO-8601 date or time (e.g. 2030-01-01)"
        ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def latest_message_time(messages: Iterable[BaseMessage]) -> datetime | None:
    """The latest send time among the messages (None when none carries a readable one).

    The working set always holds the last messages (invariant 2), so the thread's latest
    message is among them; the latest stamp is taken rather than the last message's because
    an import may carry stamps out of order.
    """
    times = (parse_time(m.additional_kwargs.get(TIMESTAMP_KEY)) for m in messages)
    return max((t for t in times if t is not None), default=None)


def thread_time(latest: datetime | None, wall: datetime) -> datetime:
    """The thread's clock: its latest message's time, or ``wall`` when later and live.

    A thread with no dated message has only the wall clock to go by.
    """
    if latest is None:
        return wall
    if wall - latest <= LIVE_WITHIN:
        return max(latest, wall)
    return latest


def review_time(
    state: Mapping[str, Any], clock: Callable[[], datetime], review_clock: ReviewClock
) -> datetime:
    """The time a review of ``state`` judges by.

    ``state["review_now"]`` when the caller gave one (``--now``; the first step writes the
    time it chose there, so every later step judges by the same), else the wall clock under
    ``review_clock="wall"``, else the thread's clock (:func:`thread_time`).

    Raises:
        InputError: A ``review_now`` that is not an ISO-8601 date or time.
    """
    requested = state.get("review_now")
    if requested:
        return parse_now(requested)
    wall = clock()
    if review_clock == "wall":
        return wall
    return thread_time(latest_message_time(state.get("messages") or []), wall)
