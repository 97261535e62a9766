"""A question naming a day: its messages are evidence, in the years the thread has lived."""

from __future__ import annotations

from datetime import date

import numpy as np
import pytest

from langgraph_topics.activation.date_periods import DatePeriod, find_periods
from langgraph_topics.activation.lived_periods import lived_periods
from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.retrieval.evidence import EvidenceScorer
from langgraph_topics.retrieval.message_index import MessageIndex
from langgraph_topics.retrieval.period_evidence import (
    asked_periods_of,
    lived_in,
    period_span,
    within,
)
from langgraph_topics.state.records import StoredMessage

TODAY = date(2026, 12, 6)


@pytest.mark.parametrize(
    ("text", "yearless"),
    [
        ("what did we talk about on March 5?", True),
        ("the 5th of March", True),
        ("in March", True),
        ("3月5日我们聊了什么", True),
        ("三月份", True),
        ("March 5, 2023", False),
        ("last March", False),
        ("2023年3月5日", False),
        ("去年3月", False),
        ("yesterday", False),
        ("上个月", False),
    ],
)
def test_a_date_without_a_year_is_marked_yearless(text: str, yearless: bool) -> None:
    (period,) = find_periods(text, TODAY)
    assert period.yearless is yearless


def test_years_back_keeps_the_days_and_whole_months() -> None:
    day = DatePeriod(date(2026, 3, 5), date(2026, 3, 5), "3月5日", yearless=True)
    assert day.years_back(3) == DatePeriod(date(2023, 3, 5), date(2023, 3, 5), "3月5日", True)
    february = DatePeriod(date(2024, 2, 1), date(2024, 2, 29), "February", yearless=True)
    earlier = february.years_back(1)
    assert earlier is not None and (earlier.start, earlier.end) == (
        date(2023, 2, 1),
        date(2023, 2, 28),
    )
    leap_day = DatePeriod(date(2024, 2, 29), date(2024, 2, 29), "Feb 29", yearless=True)
    assert leap_day.years_back(1) is None
    earlier_leap = leap_day.years_back(4)
    assert earlier_leap is not None and earlier_leap.start == date(2020, 2, 29)


def test_a_yearless_date_moves_to_the_latest_year_the_thread_has_it() -> None:
    lived_days = {date(2022, 3, 5), date(2023, 3, 5), date(2023, 6, 1)}

    def held(period: DatePeriod) -> bool:
        return any(period.start <= day <= period.end for day in lived_days)

    asked = DatePeriod(date(2026, 3, 5), date(2026, 3, 5), "March 5", yearless=True)
    (moved,) = lived_periods([asked], held, earliest=date(2022, 1, 1))
    assert moved.start == date(2023, 3, 5)  # the latest, not the first
    # Never before the thread's first message; a period the thread has stays as said.
    missing = DatePeriod(date(2026, 4, 9), date(2026, 4, 9), "April 9", yearless=True)
    assert lived_periods([missing], held, earliest=date(2022, 1, 1)) == [missing]
    placed = DatePeriod(date(2026, 3, 5), date(2026, 3, 5), "2026-03-05")
    assert lived_periods([placed], held, earliest=date(2022, 1, 1)) == [placed]
    assert lived_periods([asked], held, earliest=None) == [asked]


def _day_messages() -> list[StoredMessage]:
    """Six days of a 2023 history, the same small talk every day, one word apart."""
    messages: list[StoredMessage] = []
    for day in range(1, 7):
        for turn in range(4):
            role = "user" if turn % 2 == 0 else "assistant"
            messages.append(
                {
                    "id": f"d{day}-{turn}",
                    "role": role,
                    "content": f"good morning, how was the walk today {turn}",
                    "timestamp": f"2023-03-0{day}T09:0{turn}:00",
                }
            )
    return messages


def _index(messages: list[StoredMessage]) -> MessageIndex:
    index = MessageIndex(None, HashEmbedder(64))
    index.add(messages, [f"topic-{m['id'][:2]}" for m in messages])
    return index


def test_the_messages_of_the_asked_day_rank_first() -> None:
    messages = _day_messages()
    index = _index(messages)
    question: StoredMessage = {
        "id": "q",
        "role": "user",
        "content": "what did we talk about on March 4?",
        "timestamp": "2026-12-06T10:00:00",
    }
    periods = asked_periods_of([question], TODAY)
    assert [p.start for p in periods] == [date(2026, 3, 4)]
    scorer = EvidenceScorer(index.embedder)
    evidence = scorer.score(index, question["content"], [], periods=periods)
    best = {f"d4-{turn}" for turn in range(4)}
    top = {index.ids[p] for p in evidence.top(4)}
    assert top == best
    # Without the date, the same words rank the days alike: the fourth is not singled out.
    plain = scorer.score(index, question["content"], [])
    assert {index.ids[p] for p in plain.top(4)} != best


def test_a_period_the_thread_never_lived_changes_nothing() -> None:
    messages = _day_messages()
    index = _index(messages)
    scorer = EvidenceScorer(index.embedder)
    periods = tuple(find_periods("what did we say on July 9?", TODAY))
    dated = scorer.score(index, "what did we say on July 9?", [], periods=periods)
    plain = scorer.score(index, "what did we say on July 9?", [])
    assert np.array_equal(np.asarray(dated.score), np.asarray(plain.score))


def test_times_outside_or_unknown_fall_in_no_span() -> None:
    period = DatePeriod(date(2023, 3, 4), date(2023, 3, 4), "March 4")
    first, after = period_span(period)
    times = np.array([first - 1, first, after - 1, after, np.nan])
    assert within(times, [(first, after)]).tolist() == [False, True, True, False, False]
    assert lived_in([period], np.array([np.nan])) == [period]
