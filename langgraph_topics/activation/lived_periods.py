"""A date named without a year, read in the years the thread has lived (issue 39).

"What did we talk about on March 3?" means the latest March 3 the conversation has: asked
today of a history imported from an earlier year (or a thread resting since then), the March 3
of this year holds nothing of it. ``date_periods`` reads a yearless date as the latest one not
after the reference day; here such a period that holds no message of the thread moves back a
year at a time to the latest year that does, never before the thread's first message. A
period with a year, or placed by a word ("last March", "上个月"), is left as said.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import date

from langgraph_topics.activation.date_periods import DatePeriod


def lived_periods(
    periods: Iterable[DatePeriod], held: Callable[[DatePeriod], bool], earliest: date | None
) -> list[DatePeriod]:
    """``periods``, each yearless one that ``held`` finds empty moved to a year it is not.

    Args:
        periods: Periods a message names (``date_periods.find_periods``).
        held: Whether the thread has a message in a period.
        earliest: The day of the thread's first dated message (None: it has none).
    """
    lived: list[DatePeriod] = []
    for period in periods:
        if not period.yearless or earliest is None or held(period):
            lived.append(period)
            continue
        found = period
        for back in range(1, period.start.year - earliest.year + 1):
            earlier = period.years_back(back)
            if earlier is not None and earlier.end >= earliest and held(earlier):
                found = earlier
                break
        lived.append(found)
    return lived
