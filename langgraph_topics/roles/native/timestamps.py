"""Time between two messages, for seed 003's time decay."""

from __future__ import annotations

from datetime import UTC, datetime


def seconds_between(earlier: str | None, later: str | None) -> float:
    """Seconds from one ISO-8601 timestamp to another; 0.0 when either is missing or unreadable.

    Naive times are read as UTC, as the stores read them, so a naive and an aware time still
    compare instead of raising.
    """
    start = _instant(earlier)
    end = _instant(later)
    if start is None or end is None:
        return 0.0
    return (end - start).total_seconds()


def _instant(stamp: str | None) -> datetime | None:
    if not stamp:
        return None
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
