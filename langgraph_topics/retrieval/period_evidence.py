"""The period a question names, as evidence: the messages sent in it (issue 39).

"在2月7号，你给我推荐了哪两部电影？", "what did we decide on March 3?": the day is part of
what the user asks, and no word of the question matches the messages of that day ("话题", "what
did we talk about" match nothing). A message sent within a period the newest user message
names adds ``PERIOD_WEIGHT`` deviations to its own score (``retrieval/evidence.py``), so the
day's messages rank above the rest of the thread where the words tie, and its neighbours and
topic follow through the score's other terms. A yearless date is read in the thread's own
years (``activation/lived_periods.py``). Days are read as message times are
(``message_index.message_time``): a stamp without an offset is local time.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, time, timedelta

import numpy as np
import numpy.typing as npt

from langgraph_topics.activation.date_periods import DatePeriod, find_periods
from langgraph_topics.activation.lived_periods import lived_periods
from langgraph_topics.retrieval.message_index import (
    MessageIndex,
    OverlayMessageIndex,
    message_time,
)
from langgraph_topics.state.records import StoredMessage

PERIOD_WEIGHT = 2.5
"""Added to the own score (in deviations of the thread's scores) of a message sent in an asked
period: about what an exact match of a rare word adds, so that the period decides among
messages the words leave equal, and a strong match outside it still counts. At 1.5 a generic
word's match ("话题") elsewhere still outranked the day (the long Chinese dev set: 0.858 at
2,000 tokens against 0.905 at 2.5; ``benchmarks/README.md``)."""

Span = tuple[float, float]
"""A period as seconds: its first moment, and the first moment after it."""


def asked_periods_of(
    working: Sequence[StoredMessage], today: date, text: str | None = None
) -> tuple[DatePeriod, ...]:
    """The periods the newest user message names, read from the day it was sent.

    ``today``: the day to read from when that message carries no readable time. ``text``:
    read instead of the message's own (a search asked on the user's behalf), from its day.
    """
    newest = next((m for m in reversed(working) if m["role"] == "user"), None)
    if text is None:
        content = newest.get("content") if newest is not None else None
        text = content if isinstance(content, str) else ""
    sent = _sent_day(newest) if newest is not None else None
    return tuple(find_periods(text, sent or today)) if text else ()


def _sent_day(message: StoredMessage) -> date | None:
    stamp = message.get("timestamp")
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp).date()
    except ValueError:
        return None


def period_span(period: DatePeriod) -> Span:
    """The seconds ``period`` covers, its days read as local time."""
    first = datetime.combine(period.start, time.min).timestamp()
    after = datetime.combine(period.end + timedelta(days=1), time.min).timestamp()
    return first, after


def within(times: npt.NDArray[np.float64], spans: Sequence[Span]) -> npt.NDArray[np.bool_]:
    """Which times fall in one of ``spans`` (an unknown time, NaN, in none)."""
    inside = np.zeros(len(times), dtype=bool)
    for first, after in spans:
        inside |= (times >= first) & (times < after)
    return inside


def lived_in(periods: Sequence[DatePeriod], times: npt.NDArray[np.float64]) -> list[DatePeriod]:
    """``periods``, yearless ones in the years the thread's message ``times`` have lived."""
    known = times[np.isfinite(times)]
    if not periods or not len(known):
        return list(periods)
    earliest = datetime.fromtimestamp(float(known.min())).date()

    def held(period: DatePeriod) -> bool:
        first, after = period_span(period)
        return bool(np.any((known >= first) & (known < after)))

    return lived_periods(periods, held, earliest)


def lived_spans(periods: Sequence[DatePeriod], times: npt.NDArray[np.float64]) -> list[Span]:
    """The spans of ``periods``, yearless ones in the years ``times`` has lived."""
    return [period_span(p) for p in lived_in(periods, times)]


def thread_times(index: MessageIndex, unsplit: Sequence[StoredMessage]) -> npt.NDArray[np.float64]:
    """The send time of every message of a thread: indexed (split) and unsplit."""
    base = index.base if isinstance(index, OverlayMessageIndex) else index
    snap = base.snapshot()
    own = [message_time(m) for m in unsplit]
    return np.concatenate(
        [snap.times[: snap.count], np.asarray([np.nan if t is None else t for t in own])]
    )
