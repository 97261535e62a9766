"""Model timeouts are settings, and a turn's model calls share one deadline (issue 41 item 6).

A hung provider (the local OpenAI-compatible server, made to hang) must not hold a turn past
``Settings.turn_deadline_seconds``: the call is given up, its role degrades as on any failure,
and the responder's failure is one line.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_openai import ChatOpenAI
from llm_wire import FakeOpenAI, Reply, Request

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.roles.factory import build_roles
from langgraph_topics.roles.llm.deadline import (
    RoleDeadline,
    TurnDeadlineExceeded,
    settings_deadline,
    turn_deadline,
)
from langgraph_topics.roles.llm.models import resolve_model
from langgraph_topics.roles.llm.retries import Backoff, is_transient

APOLOGY = "Sorry, I could not produce an answer just now; please try again."


# --- the deadline itself -----------------------------------------------------------------------


def test_no_deadline_runs_the_call_as_it_is() -> None:
    assert RoleDeadline.current("responder") is None
    with turn_deadline(0):
        assert RoleDeadline.current("responder") is None


def test_a_hung_call_is_given_up_at_the_deadline() -> None:
    release = threading.Event()
    with turn_deadline(0.3):
        deadline = RoleDeadline.current("topic_window")
        assert deadline is not None
        start = time.monotonic()
        with pytest.raises(TurnDeadlineExceeded) as raised:
            deadline.run(lambda: release.wait(30))
        assert time.monotonic() - start < 2.0
        # Out of time, the next call fails at once, without starting.
        with pytest.raises(TurnDeadlineExceeded):
            deadline.run(lambda: pytest.fail("a call started after the deadline"))
    release.set()
    message = str(raised.value)
    assert "\n" not in message
    assert "turn_deadline_seconds" in message and "LANGGRAPH_TOPICS_TURN_DEADLINE" in message
    assert not is_transient(raised.value)  # never retried


def test_a_call_within_the_deadline_returns_or_raises_as_it_would() -> None:
    with turn_deadline(5):
        deadline = RoleDeadline.current("splitter")
        assert deadline is not None
        assert deadline.run(lambda: 42) == 42
        with pytest.raises(KeyError):
            deadline.run(lambda: {}["missing"])


def test_the_responder_keeps_the_answer_reserve() -> None:
    with turn_deadline(10, answer_reserve=4):
        answering = RoleDeadline.current("responder")
        reading = RoleDeadline.current("topic_window")
        assert answering is not None and reading is not None
        assert answering.ends_at - reading.ends_at == pytest.approx(4.0)
        assert "the last 4 s kept for the answer" in str(reading.exceeded())
    with turn_deadline(10, answer_reserve=60):  # never more than half the deadline
        reading = RoleDeadline.current("topic_window")
        assert reading is not None and reading.left() <= 5.0


def test_an_inner_deadline_cannot_outlast_the_outer_one() -> None:
    with turn_deadline(1), turn_deadline(100):
        deadline = RoleDeadline.current("responder")
        assert deadline is not None and deadline.left() <= 1.0


def test_a_chat_turn_reserves_one_request_for_the_answer() -> None:
    settings = Settings(turn_deadline_seconds=30, model_timeout_seconds=8)
    with settings_deadline(settings, "chat"):
        reading = RoleDeadline.current("index_router")
        assert reading is not None and reading.reserved == 8
    with settings_deadline(settings, "import"):
        reading = RoleDeadline.current("splitter")
        assert reading is not None and reading.reserved == 0


def test_a_retry_the_deadline_cannot_wait_for_is_not_made() -> None:
    slept: list[float] = []
    tries: list[int] = []

    def failing() -> None:
        tries.append(1)
        raise TimeoutError("provider timed out")

    backoff = Backoff(retries=5, base_seconds=10.0, sleep=slept.append)
    with turn_deadline(3):
        with pytest.raises(TurnDeadlineExceeded) as raised:
            backoff.run(failing, lambda error: None, RoleDeadline.current("topic_window"))
    assert tries == [1] and not slept  # the 10 s wait would pass the deadline
    assert "no time to retry TimeoutError: provider timed out" in str(raised.value)
    assert isinstance(raised.value.__cause__, TimeoutError)


# --- the settings ------------------------------------------------------------------------------


def test_timeout_and_deadline_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().model_timeout_seconds == 60.0
    assert Settings().turn_deadline_seconds == 120.0
    monkeypatch.setenv("LANGGRAPH_TOPICS_MODEL_TIMEOUT", "7.5")
    monkeypatch.setenv("LANGGRAPH_TOPICS_TURN_DEADLINE", "0")
    assert Settings().model_timeout_seconds == 7.5
    assert Settings().turn_deadline_seconds == 0.0
    monkeypatch.setenv("LANGGRAPH_TOPICS_TURN_DEADLINE", "soon")
    with pytest.raises(ValueError, match="LANGGRAPH_TOPICS_TURN_DEADLINE must be a number"):
        Settings()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("model_timeout_seconds", 0.0),
        ("turn_deadline_seconds", -1.0),
        ("model_timeout_seconds", float("nan")),
    ],
)
def test_bad_timeouts_are_refused(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        Settings(**{field: value})  # type: ignore[arg-type]


def test_a_model_built_from_a_string_gets_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    monkeypatch.setenv("LANGGRAPH_TOPICS_MODEL_TIMEOUT", "12")
    built = resolve_model("openai:gpt-4o-mini", Settings())
    assert isinstance(built, ChatOpenAI)
    assert built.request_timeout == 12.0 and built.max_retries == 0


# --- a hung provider, through the real client and wire -----------------------------------------


@pytest.fixture
def wire() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    yield server
    server.close()


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at the end of the test: the hung requests are answered then (with a failure)."""
    event = threading.Event()
    yield event
    event.set()


def _hang(release: threading.Event) -> Any:
    def handler(request: Request) -> Reply:
        release.wait(60)
        return Reply(status=500, text="released")

    return handler


def _client(wire: FakeOpenAI) -> ChatOpenAI:
    # The client's own timeout is far past the deadline: only the deadline can end the turn.
    return ChatOpenAI(model="fake", base_url=wire.url, api_key="dummy", max_retries=0, timeout=60)  # type: ignore[call-arg]


def _memory(path: Path, wire: FakeOpenAI, roles: dict[str, Any], **overrides: Any) -> TopicMemory:
    chosen: dict[str, Any] = {"model_retries": 2, "retry_backoff_seconds": 0.05, **overrides}
    settings = Settings(data_dir=path, budget_tokens=800, keep_recent=6, language="en", **chosen)
    embedder = HashEmbedder()
    built = build_roles(settings, per_role=roles, embedder=embedder)
    return TopicMemory(settings=settings, roles=built, embedder=embedder)


HISTORY = [
    {"id": f"m{n}", "role": "user" if n % 2 == 0 else "assistant", "content": text}
    for n, text in enumerate(
        [
            "Let's plan a trip to Kyoto in April.",
            "Book a ryokan near Gion early; April is busy.",
            "My sourdough starter smells like acetone.",
            "It is hungry: feed it twice a day.",
        ]
        * 12
    )
]


def test_a_hung_responder_ends_the_turn_at_the_deadline_with_one_line(
    tmp_path: Path,
    wire: FakeOpenAI,
    release: threading.Event,
    caplog: pytest.LogCaptureFixture,
) -> None:
    wire.on("responder", _hang(release))
    with _memory(
        tmp_path / "m", wire, {"responder": _client(wire)}, turn_deadline_seconds=1.5
    ) as memory:
        caplog.set_level(logging.WARNING)
        start = time.monotonic()
        answer = memory.chat("t", "Where did we want to stay in Kyoto?")
        elapsed = time.monotonic() - start
        assert answer == APOLOGY
        assert elapsed < 1.5 + 3.0, elapsed  # the deadline, and the native steps around it
        assert len(wire.of_role("responder")) == 1  # a hung request is not sent again
        lines = [r.getMessage() for r in caplog.records if "responder" in r.getMessage()]
        assert len(lines) == 1, lines
        assert "\n" not in lines[0] and "turn_deadline_seconds" in lines[0]
        events = memory.state("t")["events"]
        assert any(e["kind"] == "degraded" and "ran out" in e["detail"] for e in events)
        assert memory.check("t").ok


def test_hung_topic_windows_leave_the_answer_its_time(
    tmp_path: Path, wire: FakeOpenAI, release: threading.Event
) -> None:
    wire.on("topic_window", _hang(release))
    wire.on("responder", lambda request: Reply("Near Gion."))
    roles = {"topic_window": _client(wire), "responder": _client(wire)}
    with _memory(
        tmp_path / "m", wire, roles, turn_deadline_seconds=3.0, model_timeout_seconds=1.5
    ) as memory:
        memory.import_messages("t", HISTORY)
        start = time.monotonic()
        answer = memory.chat("t", "Where did we want to stay in Kyoto?")
        elapsed = time.monotonic() - start
        assert wire.of_role("topic_window"), "no topic window was read: the test tests nothing"
        # The windows gave up at 3.0 - 1.5 s (the answer's reserve); the responder answered.
        assert answer == "Near Gion."
        assert elapsed < 3.0 + 2.0, elapsed
        events = memory.state("t")["events"]
        assert any(e["kind"] == "degraded" for e in events)
        assert memory.check("t").ok


def test_the_timeout_setting_reaches_the_client(
    tmp_path: Path, wire: FakeOpenAI, release: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a deadline, a hung request still ends at ``LANGGRAPH_TOPICS_MODEL_TIMEOUT``."""
    wire.on("responder", _hang(release))
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    monkeypatch.setenv("OPENAI_BASE_URL", wire.url)
    monkeypatch.setenv("LANGGRAPH_TOPICS_MODEL_TIMEOUT", "0.5")
    with _memory(
        tmp_path / "m",
        wire,
        {"responder": "openai:fake"},
        turn_deadline_seconds=0,
        model_retries=1,
    ) as memory:
        start = time.monotonic()
        assert memory.chat("t", "Where did we want to stay in Kyoto?") == APOLOGY
        assert time.monotonic() - start < 0.5 * 2 + 3.0
        assert len(wire.of_role("responder")) == 2  # the first try and one retry
