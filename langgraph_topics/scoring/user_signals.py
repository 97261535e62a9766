"""User signals on a topic (seed 004 §2.3): pin, unpin and a 1–5 rating, checked first."""

from __future__ import annotations

from collections.abc import Mapping

from langgraph_topics.errors import InputError
from langgraph_topics.state.records import TopicRecord, TopicUsage

RATINGS = range(1, 6)
"""A rating is a whole number from 1 to 5 (the score reads ``rating / 5``); 0 clears it."""


def check_rating(value: object) -> int:
    """Read a rating: a whole number 0–5 (0 clears the rating), as an int or its text.

    Raises:
        InputError: One line naming the bad rating.
    """
    text = str(value).strip()
    if isinstance(value, bool) or not (isinstance(value, int) or text.isdigit()):
        raise InputError(f"rating {value!r:.40}: expected a whole number from 1 to 5 (0 clears)")
    rating = int(text)
    if rating != 0 and rating not in RATINGS:
        raise InputError(f"rating {rating}: expected a whole number from 1 to 5 (0 clears)")
    return rating


def with_signal(
    topics: Mapping[str, TopicRecord],
    topic_id: str,
    *,
    pinned: bool | None = None,
    rating: int | None = None,
    thread_id: str = "",
) -> dict[str, TopicRecord]:
    """The registry with one topic's pin or rating changed (nothing else is touched).

    Args:
        topics: The thread's registry (``TopicState.topics``).
        topic_id: The topic to mark.
        pinned: Pin (True) or unpin (False); None leaves the pin as it is.
        rating: A checked rating (``check_rating``); 0 clears it, None leaves it.
        thread_id: Named in the error.

    Raises:
        InputError: The thread has no such topic (one line naming it).
    """
    record = topics.get(topic_id)
    if record is None:
        known = ", ".join(sorted(topics)[:5]) or "none"
        raise InputError(
            f"thread {thread_id!r} has no topic {topic_id!r} (known: {known}"
            f"{', …' if len(topics) > 5 else ''}; langgraph-topics topics lists them)"
        )
    usage: TopicUsage = {**(record.get("usage") or {})}
    if pinned is True:
        usage["pinned"] = True
    elif pinned is False:
        usage.pop("pinned", None)  # sparse: an unpinned topic carries no flag
    if rating:
        usage["rating"] = rating
    elif rating == 0:
        usage.pop("rating", None)
    changed: TopicRecord = {**record, "usage": usage}
    if not usage:
        del changed["usage"]
    return {**topics, topic_id: changed}
