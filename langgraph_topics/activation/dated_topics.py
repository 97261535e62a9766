"""Which sleeping topics a date query reaches: those discussed in the asked period (seed 000 §4.8).

A topic's active span runs from the day of its first message to the day of its newest, read
from the topic store's time index (seed 000 §9: which topics each day holds). An archived
topic's span is also what its shelf filing says (``first_day``..``last_day``, or the whole
``YYYY-MM`` month it is filed under when its messages were undated), so a store whose time
index lost a day still finds it by its archive folder.

Only dormant and archived topics are offered: active ones are read every turn already, and a
divided topic is reached through its subtopics.
"""

from __future__ import annotations

from calendar import monthrange
from collections.abc import Iterable, Mapping, Sequence
from datetime import date

from langgraph_topics.activation.date_periods import DatePeriod
from langgraph_topics.activation.hierarchy import leaves
from langgraph_topics.state.records import ArchivedTopic, AskedPeriod, TopicRecord

_SLEEPING = ("dormant", "archived")

Span = tuple[date, date]


def asked_periods(periods: Iterable[DatePeriod]) -> list[AskedPeriod]:
    """Periods as the activation request carries them (ISO days: checkpointed state)."""
    return [
        {"start": period.start.isoformat(), "end": period.end.isoformat(), "said": period.said}
        for period in periods
    ]


def _day(text: object) -> date | None:
    if not isinstance(text, str):
        return None
    try:
        return date.fromisoformat(text[:10])
    except ValueError:
        return None


def _widen(spans: dict[str, Span], topic_id: str, first: date, last: date) -> None:
    held = spans.get(topic_id)
    spans[topic_id] = (min(first, held[0]), max(last, held[1])) if held else (first, last)


def topic_spans(
    time_index: Mapping[str, Sequence[str]], archive: Iterable[ArchivedTopic] = ()
) -> dict[str, Span]:
    """Each topic's first and last day, from the time index and the archive's filings."""
    spans: dict[str, Span] = {}
    for text, topic_ids in time_index.items():
        day = _day(text)
        if day is None:
            continue
        for topic_id in topic_ids:
            _widen(spans, topic_id, day, day)
    for entry in archive:
        first, last = _day(entry.get("first_day")), _day(entry.get("last_day"))
        if first is None or last is None:
            month = _day(f"{entry['month']}-01")
            if month is None:
                continue
            first = month
            last = month.replace(day=monthrange(month.year, month.month)[1])
        _widen(spans, entry["topic_id"], first, last)
    return spans


def dated_topics(
    periods: Sequence[AskedPeriod],
    topics: Mapping[str, TopicRecord],
    spans: Mapping[str, Span],
    days: Mapping[str, Sequence[str]] | None = None,
) -> list[str]:
    """The dormant and archived topics whose span overlaps an asked period, newest first.

    ``days``: the time index (day → topics with a message that day). A topic holding a
    message on an asked day comes before one whose span only runs across the period (a topic
    of January and April "overlaps" March): it is what the user asked about.
    """
    asked = _asked(periods)
    on_the_days = held_in(periods, days or {})
    last_day: dict[str, date] = {}
    held: set[str] = set()
    for topic_id, (first, last) in spans.items():
        overlaps = any(first <= end and last >= start for start, end in asked)
        if topic_id not in topics or not overlaps:
            continue
        for leaf in leaves(topics, topic_id):
            if topics[leaf]["status"] in _SLEEPING:
                last_day[leaf] = max(last, last_day.get(leaf, last))
                if topic_id in on_the_days:  # a divided topic's days are its subtopics'
                    held.add(leaf)
    return sorted(
        last_day, key=lambda topic_id: (topic_id not in held, -last_day[topic_id].toordinal())
    )


def held_in(periods: Sequence[AskedPeriod], days: Mapping[str, Sequence[str]]) -> set[str]:
    """The topics with a message on a day of an asked period, by the time index ``days``."""
    asked = _asked(periods)
    found: set[str] = set()
    for text, topic_ids in days.items():
        day = _day(text)
        if day is not None and any(start <= day <= end for start, end in asked):
            found.update(topic_ids)
    return found


def _asked(periods: Sequence[AskedPeriod]) -> list[Span]:
    return [
        (start, end)
        for period in periods
        if (start := _day(period["start"])) is not None and (end := _day(period["end"]))
    ]
