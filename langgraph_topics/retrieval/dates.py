"""The date bounds of a search (``--since``/``--until``, the ``search_memory`` tool's)."""

from __future__ import annotations

from datetime import datetime, time


def date_bound(option: str, text: str | None, *, end_of_day: bool) -> datetime | None:
    """An ISO date or time of ``option`` (naive: UTC); a bare date ending a range is its end.

    Raises:
        InputError: Not an ISO-8601 date or time (one line naming the option).
    """
    from langgraph_topics.review.clock import parse_now

    if text is None:
        return None
    parsed = parse_now(text, option)
    if end_of_day and len(text.strip()) == len("2023-05-08"):
        parsed = datetime.combine(parsed.date(), time.max, tzinfo=parsed.tzinfo)
    return parsed
