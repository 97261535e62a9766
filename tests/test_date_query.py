"""Date queries (seed 000 §4.8): the periods a message names, and whether it asks to recall."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage

from langgraph_topics.activation.date_periods import chinese_number, find_periods
from langgraph_topics.activation.date_query import find_date_query
from langgraph_topics.activation.dated_topics import dated_topics, topic_spans
from langgraph_topics.nodes.recall_cue import reference_day
from langgraph_topics.state.records import ArchivedTopic, TopicRecord

TODAY = date(2025, 2, 12)  # a Wednesday


def _period(text: str, today: date = TODAY) -> tuple[str, str]:
    (period,) = find_periods(text, today)
    return period.start.isoformat(), period.end.isoformat()


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("in March 2024", "2024-03-01", "2024-03-31"),
        ("in March", "2024-03-01", "2024-03-31"),  # the latest March not after today
        ("in February", "2025-02-01", "2025-02-28"),  # this month counts
        ("last February", "2024-02-01", "2024-02-29"),  # "last": strictly before this month
        ("last May", "2024-05-01", "2024-05-31"),
        ("2024-03", "2024-03-01", "2024-03-31"),
        ("2024/03/05", "2024-03-05", "2024-03-05"),
        ("March 3rd, 2024", "2024-03-03", "2024-03-03"),
        ("the 3rd of March 2024", "2024-03-03", "2024-03-03"),
        ("last week", "2025-02-03", "2025-02-09"),
        ("this week", "2025-02-10", "2025-02-16"),
        ("the week before last", "2025-01-27", "2025-02-02"),
        ("last month", "2025-01-01", "2025-01-31"),
        ("last year", "2024-01-01", "2024-12-31"),
        ("yesterday", "2025-02-11", "2025-02-11"),
        ("two weeks ago", "2025-01-27", "2025-02-02"),
        ("3 days ago", "2025-02-09", "2025-02-09"),
        ("a few days ago", "2025-02-08", "2025-02-10"),
        ("last Monday", "2025-02-10", "2025-02-10"),
        ("back in 2023", "2023-01-01", "2023-12-31"),
        ("2024年3月", "2024-03-01", "2024-03-31"),
        ("二〇二四年五月", "2024-05-01", "2024-05-31"),
        ("2024年3月5号", "2024-03-05", "2024-03-05"),
        ("去年3月", "2024-03-01", "2024-03-31"),
        ("三月份", "2024-03-01", "2024-03-31"),
        ("十二月", "2024-12-01", "2024-12-31"),
        ("上个月", "2025-01-01", "2025-01-31"),
        ("上周", "2025-02-03", "2025-02-09"),
        ("上周三", "2025-02-05", "2025-02-05"),
        ("前天", "2025-02-10", "2025-02-10"),
        ("3天前", "2025-02-09", "2025-02-09"),
        ("两个月前", "2024-12-01", "2024-12-31"),
        ("去年", "2024-01-01", "2024-12-31"),
    ],
)
def test_periods_are_read_relative_to_the_reference_day(text: str, start: str, end: str) -> None:
    assert _period(text) == (start, end)


@pytest.mark.parametrize(
    "text",
    [
        "February 30",  # no such day
        "13月",
        "in March 2026",  # after the reference day: a date query asks about the past
        "每周三次力量训练",  # three times a week, not a Wednesday
        "we march on",  # a verb
        "May I ask you something?",  # a verb
        "I have 3 kids",
        "",
    ],
)
def test_what_names_no_past_period_gives_none(text: str) -> None:
    assert find_periods(text, TODAY) == []


def test_chinese_numbers() -> None:
    assert [chinese_number(t) for t in ("三", "十", "十二", "二十一", "两", "12")] == [
        3,
        10,
        12,
        21,
        2,
        12,
    ]
    assert chinese_number("十十") is None and chinese_number("三四") is None


@pytest.mark.parametrize(
    "text",
    [
        "What did we talk about in March 2024?",
        "还记得2024年3月我们聊了什么吗",
        "What did we discuss last May?",
        "Remind me what we said last week about the trip.",
        "Do you remember our conversation from 2023?",
        "我们上个月聊了什么？",
        "上周我们讨论的那个问题，你还记得吗？",
        "What did I tell you yesterday?",
        "我之前跟你说过3月去日本的事",
    ],
)
def test_asking_about_a_period_is_a_date_query(text: str) -> None:
    query = find_date_query(text, TODAY)
    assert query is not None and query.periods


@pytest.mark.parametrize(
    "text",
    [
        "My flight is on March 3.",
        "3月3号我要出差",
        "记得3月3号带护照",  # "remember to": an errand, not a question about the past
        "Remember that my flight is on March 3",
        "I'll go back to Kyoto in March.",
        "What did we talk about?",  # a recall, but of no period: the recall cue's business
        "Is it dead? I fed it yesterday.",
        # About someone else's talk, a greeting, a memory (LoCoMo's dialogues hold such lines).
        "Last week I talked to my friend who is a fan of Harry Potter.",
        "Hey John, been good since we talked? I joined a gym last week!",
        "These figurines I bought yesterday remind me of home.",
        "I'll always remember our camping trip last year.",
        "我昨天和朋友聊了很久",
    ],
)
def test_a_date_without_a_request_to_recall_is_no_date_query(text: str) -> None:
    assert find_date_query(text, TODAY) is None


@given(st.text(), st.dates())
@example("what did we talk about last week, 上个月 or the day before yesterday?", date.min)
@example("what did we talk about this week?", date.max)
@example("what did we discuss 999 weeks ago, 999 months ago or 99 years ago?", date(1970, 1, 3))
def test_the_detector_never_raises_and_its_periods_are_past_and_ordered(
    text: str, today: date
) -> None:
    for period in find_periods(text, today):
        assert period.start <= period.end and period.start <= today
    find_date_query(text, today)


_PIECES = st.sampled_from(
    [
        "what did we talk about",
        "聊了什么",
        " in ",
        "March",
        "May",
        "last",
        " week",
        "2024",
        "-",
        "/",
        "年",
        "月",
        "日",
        "十",
        "二",
        "31",
        "0",
        "ago",
        "前",
        "上个",
        "周",
        " ",
    ]
)


@given(st.lists(_PIECES, max_size=12).map("".join), st.dates())
def test_date_like_noise_never_raises(text: str, today: date) -> None:
    for period in find_periods(text, today):
        assert period.start <= period.end <= date.max
    find_date_query(text, today)


def _record(topic_id: str, status: str, **extra: object) -> TopicRecord:
    record: TopicRecord = {
        "id": topic_id,
        "name": topic_id,
        "status": status,  # type: ignore[typeddict-item]
        "parent_id": None,
        "scores": [],
        "created_at": "2024-01-01T00:00:00+00:00",
        "last_active_at": "2024-01-01T00:00:00+00:00",
        "message_count": 2,
    }
    return {**record, **extra}  # type: ignore[typeddict-item]


def _filing(topic_id: str, month: str, first: str | None, last: str | None) -> ArchivedTopic:
    return {
        "topic_id": topic_id,
        "name": topic_id,
        "month": month,
        "first_day": first,
        "last_day": last,
        "archived_at": "2030-01-01T00:00:00+00:00",
        "reason": "dormant",
        "message_count": 2,
        "brief": "",
        "summary": {"text": "", "facts": []},  # type: ignore[typeddict-item]
    }


def test_sleeping_topics_whose_span_overlaps_the_period_are_offered_newest_first() -> None:
    topics = {
        "jan-mar": _record("jan-mar", "archived"),
        "feb": _record("feb", "dormant"),
        "april": _record("april", "archived"),
        "active-feb": _record("active-feb", "active"),
        "undated": _record("undated", "archived"),
        "parent": _record("parent", "split", children=["child"]),
        "child": _record("child", "dormant"),
    }
    time_index = {
        "2024-01-10": ["jan-mar"],
        "2024-02-11": ["feb", "active-feb", "parent"],
        "2024-03-20": ["jan-mar"],
        "2024-04-02": ["april"],
    }
    # Undated messages: only the archive's month folder dates it.
    archive = [_filing("undated", "2024-02", None, None)]
    spans = topic_spans(time_index, archive)
    february = [{"start": "2024-02-01", "end": "2024-02-29", "said": "February 2024"}]
    assert dated_topics(february, topics, spans) == ["jan-mar", "undated", "feb", "child"]
    june = [{"start": "2024-06-01", "end": "2024-06-30", "said": "June"}]
    assert dated_topics(june, topics, spans) == []
    # With the time index, a topic with a message on a day of February goes before those whose
    # span only runs across it.
    assert dated_topics(february, topics, spans, time_index) == [
        "feb",
        "child",
        "jan-mar",
        "undated",
    ]


def test_the_reference_day_is_the_messages_own_when_it_has_one() -> None:
    def clock() -> datetime:
        return datetime(2030, 1, 1, tzinfo=UTC)

    dated = HumanMessage("what did we discuss yesterday?", id="m1")
    dated.additional_kwargs["timestamp"] = "2024-03-05T09:00:00+08:00"
    state = {"messages": [dated, AIMessage("…", id="m2")]}
    assert reference_day(state, clock) == date(2024, 3, 5)  # type: ignore[arg-type]
    plain = {"messages": [HumanMessage("what did we discuss yesterday?", id="m3")]}
    assert reference_day(plain, clock) == date(2030, 1, 1)  # type: ignore[arg-type]
