"""The review ages a thread on its own clock (issue 36 item 5): an imported history is not
archived for the years since it was said, and ``--now`` or the wall clock age it on request."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import MemoryFactory
from fakes import with_roles
from langchain_core.messages import HumanMessage
from review_support import BlockSplitter, block_records

from langgraph_topics import Settings, TopicMemory, TopicServices
from langgraph_topics.cli.main import main
from langgraph_topics.review.clock import (
    LIVE_WITHIN,
    latest_message_time,
    review_time,
    thread_time,
)
from langgraph_topics.review.criteria import idle_days
from langgraph_topics.roles.protocols import Roles
from langgraph_topics.state.messages import TIMESTAMP_KEY
from langgraph_topics.stores.embeddings import UseEmbedder

THREAD = "t"
LAST = datetime(2023, 6, 15, 10, 3, tzinfo=UTC)
"""The last message of :func:`records_of_2023`."""
WALL = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class Clock:
    """A wall clock the test sets by hand."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def records_of_2023() -> list[dict[str, Any]]:
    """The review blocks (six subjects, two of them one Kyoto trip) said over six June days."""
    records = block_records()
    for record in records:
        stamp = record["timestamp"]  # block n in month n of 2024, exchange t on day 1t
        block, exchange = int(stamp[5:7]), int(stamp[9])
        record["timestamp"] = f"2023-06-{9 + block:02d}T10:0{exchange}:00"
    return records


def stamped(*times: str | None) -> list[HumanMessage]:
    kwargs = [{TIMESTAMP_KEY: t} if t is not None else {} for t in times]
    return [
        HumanMessage(content="hi", id=f"m{i}", additional_kwargs=k) for i, k in enumerate(kwargs)
    ]


def test_the_latest_stamp_is_the_thread_s_time_whatever_the_order() -> None:
    messages = stamped("2023-06-15T10:00:00", None, "2023-06-14T09:00:00", "not a time")
    assert latest_message_time(messages) == datetime(2023, 6, 15, 10, tzinfo=UTC)
    assert latest_message_time(stamped(None)) is None


def test_the_thread_s_clock_is_its_last_message_unless_it_is_live() -> None:
    # Resting (an import, or a thread nobody wrote in for longer than a day): its last message.
    assert thread_time(LAST, WALL) == LAST
    assert thread_time(LAST, LAST + LIVE_WITHIN + timedelta(seconds=1)) == LAST
    # Live: the wall clock, which is later.
    assert thread_time(LAST, LAST + timedelta(hours=5)) == LAST + timedelta(hours=5)
    assert thread_time(LAST, LAST + LIVE_WITHIN) == LAST + LIVE_WITHIN
    # A stamp later than the wall clock is still the thread's latest moment.
    assert thread_time(LAST, LAST - timedelta(hours=1)) == LAST
    # Nothing dated: the wall clock is all there is.
    assert thread_time(None, WALL) == WALL


def test_review_time_takes_a_requested_time_then_the_setting() -> None:
    state: dict[str, Any] = {"messages": stamped(LAST.isoformat())}
    assert review_time(state, lambda: WALL, "thread") == LAST
    assert review_time(state, lambda: WALL, "wall") == WALL
    asked = {**state, "review_now": "2023-07-15"}
    assert review_time(asked, lambda: WALL, "thread") == datetime(2023, 7, 15, tzinfo=UTC)


def test_the_wall_clock_setting_reads_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().review_clock == "thread"
    monkeypatch.setenv("LANGGRAPH_TOPICS_REVIEW_CLOCK", "wall")
    assert Settings().review_clock == "wall"
    monkeypatch.setenv("LANGGRAPH_TOPICS_REVIEW_CLOCK", "sundial")
    with pytest.raises(ValueError, match="LANGGRAPH_TOPICS_REVIEW_CLOCK") as caught:
        Settings()
    assert "\n" not in str(caught.value)


def imported_2023(make_memory: MemoryFactory, roles: Roles) -> TopicMemory:
    splitter = BlockSplitter()
    memory = make_memory(budget=900, roles=with_roles(roles, splitter=splitter), keep_recent=8)
    splitter.locate = lambda i: memory.services.stores(THREAD).topic_store.locate(i)
    memory.import_messages(THREAD, records_of_2023())
    return memory


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 else {}, err


def test_an_imported_2023_conversation_is_archived_only_when_asked_to_age(
    make_memory: MemoryFactory, roles: Roles, capsys: pytest.CaptureFixture[str]
) -> None:
    memory = imported_2023(make_memory, roles)
    data = ["--thread", THREAD, "--data-dir", str(memory.settings.data_dir)]
    assert latest_message_time(memory.state(THREAD)["messages"]) == LAST

    code, at_once, err = cli(capsys, "review", "--json", *data)
    assert code == 0, err
    assert at_once["at"] == LAST.isoformat()  # judged as of its own last message
    assert at_once["archived"] == []
    assert at_once["merged"], "the Kyoto duplicate merges whatever the clock"
    topics = memory.state(THREAD)["topics"]
    assert {t["status"] for t in topics.values()} != {"archived"}

    later = (LAST + timedelta(days=30)).isoformat()
    code, aged, err = cli(capsys, "review", "--now", later, "--json", *data)
    assert code == 0, err
    topics = memory.state(THREAD)["topics"]
    idle = {
        topic_id
        for topic_id, record in at_once_registry(topics).items()
        if idle_days(record, LAST + timedelta(days=30)) > memory.settings.archive_after_days
    }
    assert idle, "every topic is more than a week idle 30 days on"
    # As a review on the wall clock archived them: dormant past 7 days, nothing to keep them.
    assert {a["topic_id"] for a in aged["archived"]} == idle
    assert all(a["reason"].startswith("dormant") for a in aged["archived"])
    assert {topics[t]["status"] for t in idle} == {"archived"}
    assert memory.check(THREAD).ok


def at_once_registry(topics: dict[str, Any]) -> dict[str, Any]:
    """The topics a review could still archive (not divided into subtopics)."""
    return {topic_id: r for topic_id, r in topics.items() if r["status"] != "split"}


def test_the_wall_clock_ages_an_imported_conversation_when_asked(
    make_memory: MemoryFactory, roles: Roles, capsys: pytest.CaptureFixture[str]
) -> None:
    memory = imported_2023(make_memory, roles)
    data = ["--thread", THREAD, "--data-dir", str(memory.settings.data_dir)]
    with pytest.raises(SystemExit) as refused:
        main(["review", "--now", "2030-01-01", "--wall-clock", *data])
    err = capsys.readouterr().err
    assert refused.value.code == 2 and len(err.strip().splitlines()) == 1 and "--now" in err
    code, aged, err = cli(capsys, "review", "--wall-clock", "--json", *data)
    assert code == 0, err
    assert aged["at"] > "2025"  # the calendar, not the thread
    assert aged["archived"] and all(a["reason"].startswith("dormant") for a in aged["archived"])


@pytest.fixture
def clocked(tmp_path: Path, roles: Roles, embedder: UseEmbedder) -> Iterator[Any]:
    """A memory of the 2023 conversation whose wall clock the test moves."""
    clock = Clock(WALL)
    splitter = BlockSplitter()
    settings = Settings(data_dir=tmp_path / "data", budget_tokens=900, keep_recent=8)
    services = TopicServices.open(
        settings, roles=with_roles(roles, splitter=splitter), embedder=embedder, clock=clock
    )
    memory = TopicMemory(services=services)
    splitter.locate = lambda i: memory.services.stores(THREAD).topic_store.locate(i)
    memory.import_messages(THREAD, records_of_2023())
    try:
        yield memory, clock
    finally:
        memory.close()


def test_a_live_thread_is_judged_by_the_wall_clock(clocked: Any) -> None:
    memory, clock = clocked
    clock.now = LAST + timedelta(hours=6)  # the same evening: the thread is live
    assert memory.review(THREAD)["at"] == clock.now.isoformat()
    # Someone writes in it a month on: its latest message is now, and the review ages it so.
    clock.now = LAST + timedelta(days=30)
    memory.chat(THREAD, "Thanks for all of that. Anything else I should know about?")
    clock.now += timedelta(hours=1)
    done = memory.review(THREAD)
    assert done["at"] == clock.now.isoformat()
    assert done["archived"], "a month idle on a live thread: dormant topics go"


def test_the_wall_clock_setting_ages_every_review(
    tmp_path: Path, roles: Roles, embedder: UseEmbedder
) -> None:
    splitter = BlockSplitter()
    settings = Settings(
        data_dir=tmp_path / "data", budget_tokens=900, keep_recent=8, review_clock="wall"
    )
    services = TopicServices.open(
        settings, roles=with_roles(roles, splitter=splitter), embedder=embedder, clock=lambda: WALL
    )
    memory = TopicMemory(services=services)
    try:
        splitter.locate = lambda i: memory.services.stores(THREAD).topic_store.locate(i)
        memory.import_messages(THREAD, records_of_2023())
        done = memory.review(THREAD)
        assert done["at"] == WALL.isoformat() and done["archived"]
    finally:
        memory.close()
