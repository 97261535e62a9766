"""The time a review judges by: ``--now`` when given, else the services' clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from langgraph_topics.errors import InputError


def parse_now(text: str) -> datetime:
    """An ISO-8601 date or time (``2030-01-01``, ``2030-01-01T08:00:00+08:00``); naive is UTC.

    Raises:
        InputError: ``text`` is not an ISO-8601 date or time (one line naming it).
    """
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InputError(
            f"--now {text!r}: not an ISO-8601 date or time (e.g. 2030-01-01)"
        ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def review_time(requested: str | None, clock: Callable[[], datetime]) -> datetime:
    """The requested time, or the clock's."""
    return parse_now(requested) if requested else clock()
