"""The daily review (seed 000 §4.8, §16.3): `Settings.review_at`, at the first turn after it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from cli_runner import run_cli
from conversations import subject_records

from langgraph_topics import Settings, TopicMemory, TopicServices
from langgraph_topics.errors import InputError
from langgraph_topics.review.schedule import last_scheduled, parse_review_at, review_due
from langgraph_topics.roles.protocols import Roles
from langgraph_topics.stores.embeddings import UseEmbedder

THREAD = "daily"


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def test_review_at_accepts_a_time_of_day_with_or_without_an_offset() -> None:
    assert parse_review_at("03:00") == time(3, 0, tzinfo=UTC)
    assert parse_review_at(" 03:30+08:00 ").utcoffset() == timedelta(hours=8)


@pytest.mark.parametrize("text", ["3 am", "25:00", "", "2024-01-01"])
def test_a_bad_review_time_is_one_line_naming_the_setting(text: str) -> None:
    with pytest.raises(InputError, match="review_at") as caught:
        Settings(review_at=text)
    assert "\n" not in str(caught.value)


def test_the_last_scheduled_time_is_today_once_passed_else_yesterday() -> None:
    at = parse_review_at("03:00")
    assert last_scheduled(at, datetime(2024, 6, 2, 3, 0, tzinfo=UTC)) == datetime(
        2024, 6, 2, 3, 0, tzinfo=UTC
    )
    assert last_scheduled(at, datetime(2024, 6, 2, 2, 59, tzinfo=UTC)) == datetime(
        2024, 6, 1, 3, 0, tzinfo=UTC
    )
    # 03:00 in UTC+8 is 19:00 UTC the day before
    east = parse_review_at("03:00+08:00")
    assert last_scheduled(east, datetime(2024, 6, 2, 20, 0, tzinfo=UTC)) == datetime(
        2024, 6, 3, 3, 0, tzinfo=timezone(timedelta(hours=8))
    )


def test_due_after_the_time_once_and_never_for_a_thread_without_topics() -> None:
    at = parse_review_at("03:00")
    now = datetime(2024, 6, 2, 9, 0, tzinfo=UTC)
    created = ["2024-06-01T10:00:00+00:00"]
    assert review_due(at, now, None, created)
    assert not review_due(at, now, None, [])
    assert not review_due(at, now, None, ["2024-06-02T04:00:00+00:00"])  # made after 03:00
    assert not review_due(at, now, "2024-06-02T03:05:00+00:00", created)
    assert review_due(at, now, "2024-06-01T23:00:00+00:00", created)


@pytest.fixture
def daily_memory(tmp_path: Path, roles: Roles, embedder: UseEmbedder) -> Iterator[Any]:
    clock = Clock(datetime(2024, 6, 1, 1, 0, tzinfo=UTC))
    settings = Settings(data_dir=tmp_path / "data", budget_tokens=600, review_at="03:00")
    services = TopicServices.open(settings, roles=roles, embedder=embedder, clock=clock)
    memory = TopicMemory(services=services)
    try:
        yield memory, clock
    finally:
        memory.close()


def _reviewed_at(memory: TopicMemory) -> str | None:
    record = memory.state(THREAD).get("review")
    return None if record is None else str(record["at"])


def test_a_thread_is_reviewed_once_at_the_first_turn_after_the_time(daily_memory: Any) -> None:
    memory, clock = daily_memory
    memory.import_messages(THREAD, subject_records(["kyoto", "stocks", "sourdough", "fitness"]))
    memory.wait_idle()
    assert memory.state(THREAD).get("topics"), "the import made topics to review"

    # Never reviewed, and its topics (dated by their messages) were there at yesterday's
    # 03:00: the first turn reviews; a turn before today's 03:00 does not again.
    memory.chat(THREAD, "Which ryokan did we pick in Kyoto?")
    assert _reviewed_at(memory) == "2024-06-01T01:00:00+00:00"
    clock.now = datetime(2024, 6, 1, 2, 59, tzinfo=UTC)
    memory.chat(THREAD, "Was Gion the neighbourhood?")
    assert _reviewed_at(memory) == "2024-06-01T01:00:00+00:00"

    clock.now = datetime(2024, 6, 1, 3, 30, tzinfo=UTC)
    memory.chat(THREAD, "And how is my sourdough starter doing?")
    assert _reviewed_at(memory) == "2024-06-01T03:30:00+00:00"

    clock.now = datetime(2024, 6, 1, 9, 0, tzinfo=UTC)  # later the same day: not twice
    memory.chat(THREAD, "What was the plan for the stocks?")
    assert _reviewed_at(memory) == "2024-06-01T03:30:00+00:00"

    clock.now = datetime(2024, 6, 2, 3, 1, tzinfo=UTC)  # the next day's time came round
    reply = memory.chat(THREAD, "Remind me of my fitness routine.")
    assert reply
    assert _reviewed_at(memory) == "2024-06-02T03:01:00+00:00"
    messages = memory.state(THREAD)["messages"]
    assert messages[-1].type == "ai"  # the turn's reply is still the newest message


def test_without_review_at_no_turn_reviews(
    tmp_path: Path, roles: Roles, embedder: UseEmbedder
) -> None:
    clock = Clock(datetime(2024, 6, 1, 12, 0, tzinfo=UTC))
    settings = Settings(data_dir=tmp_path / "data", budget_tokens=600)
    services = TopicServices.open(settings, roles=roles, embedder=embedder, clock=clock)
    with TopicMemory(services=services) as memory:
        memory.import_messages(THREAD, subject_records(["kyoto", "stocks", "sourdough"]))
        clock.now += timedelta(days=3)
        memory.chat(THREAD, "Which ryokan did we pick in Kyoto?")
        assert memory.state(THREAD).get("review") is None


def test_chat_on_the_command_line_reviews_daily_unless_told_otherwise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    records = tmp_path / "history.jsonl"
    records.write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in subject_records(["kyoto", "stocks", "sourdough", "fitness"])
        )
    )
    monkeypatch.delenv("LANGGRAPH_TOPICS_REVIEW_AT", raising=False)
    args = ("--data-dir", str(data), "--thread", THREAD)
    assert run_cli(capsys, "import", str(records), *args, "--budget", "600")[0] == 0
    with TopicMemory(settings=Settings(data_dir=data)) as memory:
        assert memory.state(THREAD).get("topics")
    # The history's topics are older than the last 03:00: the first chat turn reviews.
    assert run_cli(capsys, "chat", *args, stdin="Which ryokan did we pick?\n")[0] == 0
    with TopicMemory(settings=Settings(data_dir=data)) as memory:
        assert memory.state(THREAD).get("review") is not None
