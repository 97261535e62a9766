"""``activate_topic`` in user scope searches the user's other threads too (issue 40).

The turn's question found nothing in the other threads; the model then asks for a topic by
name, and what the other threads hold for that request joins the turn's window. Inside the
turn another thread is read only if its lock is free now: a turn never waits on another.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conversations import subject_records
from fakes import ActivatingResponder
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.middleware import TopicMemoryMiddleware
from langgraph_topics.middleware.fakes import ToolCallingFakeModel
from langgraph_topics.roles.native import native_roles
from langgraph_topics.stores.embeddings import UseEmbedder

QUESTION = "What should I pack for the trip?"
ASKED = "Which neighbourhood in Kyoto is best to stay in?"


def open_memory(data_dir: Path, responder: Any = None, **changes: Any) -> TopicMemory:
    settings = Settings(
        data_dir=data_dir,
        **{"budget_tokens": 600, "keep_recent": 6, "memory_scope": "user", **changes},
    )
    embedder = UseEmbedder()
    roles = native_roles(embedder, settings)
    if responder is not None:
        roles = replace(roles, responder=responder)
    return TopicMemory(settings=settings, roles=roles, embedder=embedder)


def with_history(memory: TopicMemory) -> None:
    ann = memory.user("ann")
    ann.import_messages("history", subject_records(["kyoto", "stocks", "sourdough"], prefix="a"))
    memory.wait_idle()


@pytest.fixture
def responder() -> ActivatingResponder:
    return ActivatingResponder(query=ASKED)


@pytest.fixture
def memory(tmp_path: Path, responder: ActivatingResponder) -> Iterator[TopicMemory]:
    with open_memory(tmp_path / "m", responder) as opened:
        with_history(opened)
        yield opened


def test_the_models_request_finds_what_the_question_did_not(
    memory: TopicMemory, responder: ActivatingResponder
) -> None:
    ann = memory.user("ann")
    assert not any("Gion" in q["message"]["content"] for q in ann.recall("new", QUESTION))
    ann.chat("new", QUESTION)
    assert responder.calls[0] is True  # offered, though "new" has no dormant topic
    values = memory.state(ann.thread("new"))
    prompt = values["context"]["system_prompt"]
    line = next(line for line in prompt.splitlines() if "Gion" in line)
    assert "(thread “history”)" in line
    assert values["context"]["tokens"] <= values["context"]["budget"]
    searched = [e for e in values["events"] if e["detail"].startswith("user scope:")]
    assert searched and searched[0]["reason"] == "tool_call"
    assert memory.check(ann.thread("new")).ok and memory.check(ann.thread("history")).ok


def test_thread_scope_offers_no_search_of_other_threads(
    memory: TopicMemory, responder: ActivatingResponder
) -> None:
    ann = memory.user("ann", scope="thread")
    ann.chat("new", QUESTION)
    assert responder.calls == [False]  # nothing dormant here, no other thread to search
    assert "Gion" not in memory.state(ann.thread("new"))["context"]["system_prompt"]


def test_a_busy_thread_is_left_out_of_the_search_without_waiting(
    tmp_path: Path, responder: ActivatingResponder, caplog: pytest.LogCaptureFixture
) -> None:
    """Its files lock held elsewhere: left out now, never waited for (the lock timeout is long)."""
    with open_memory(tmp_path / "m", responder, lock_timeout_seconds=600) as memory:
        with_history(memory)
        ann = memory.user("ann")
        reading = ann.recall("new", QUESTION)  # before the lock is taken
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with memory.reading(ann.thread("history")):
                held.set()
                release.wait(60)

        holder = threading.Thread(target=hold)
        holder.start()
        try:
            assert held.wait(30)
            with caplog.at_level(logging.WARNING):
                memory.chat(ann.thread("new"), QUESTION, user_id="ann", scope_quotes=reading)
        finally:
            release.set()
            holder.join()
        assert "Gion" not in memory.state(ann.thread("new"))["context"]["system_prompt"]
        assert any(
            "thread 'history' not read for this turn" in r.getMessage() and "busy" in r.getMessage()
            for r in caplog.records
        )


def test_the_agents_activate_topic_searches_the_users_other_threads(tmp_path: Path) -> None:
    """Called inside the run (as the agent's tool node calls it), with the model's words."""
    with open_memory(tmp_path / "m") as memory:
        with_history(memory)
        middleware = TopicMemoryMiddleware(memory)

        @tool
        def recall_trip(query: str) -> str:
            """Recall the trip (the model's activate_topic, with its own words)."""
            return middleware.activate(middleware._tool_thread(), ASKED)

        model = ToolCallingFakeModel(triggers={"trip": "recall_trip"})
        agent = create_agent(model, [recall_trip], middleware=[middleware])
        config = {"configurable": {"thread_id": "new", "user_id": "ann"}}
        result = agent.invoke({"messages": [HumanMessage(QUESTION)]}, config)
        (reply,) = [m for m in result["messages"] if isinstance(m, ToolMessage)]
        assert "Your other conversations hold" in str(reply.content)
        first, after = (str(call[0].content) for call in model.calls[-2:])
        assert "Gion" not in first  # the question alone found nothing there
        line = next(line for line in after.splitlines() if "Gion" in line)
        assert "(thread “history”)" in line


def open_searching(data_dir: Path, model: Any) -> TopicMemory:
    """User scope with a model responder that calls ``search_memory`` (scripted)."""
    from langgraph_topics.roles.factory import build_roles

    settings = Settings(
        data_dir=data_dir,
        budget_tokens=900,
        keep_recent=6,
        language="en",
        strong_model=None,
        cheap_model=None,
        role_models={},
        memory_scope="user",
    )
    embedder = UseEmbedder()
    roles = build_roles(settings, per_role={"responder": model}, embedder=embedder)
    return TopicMemory(settings=settings, roles=roles, embedder=embedder)


@pytest.mark.parametrize(("until", "found"), [("", True), ("2001-01-01", False)])
def test_search_memory_searches_the_users_other_threads_in_its_period(
    tmp_path: Path, until: str, found: bool
) -> None:
    from test_responder_search import SearchingModel

    model = SearchingModel(args={"query": ASKED, "until": until} if until else {"query": ASKED})
    with open_searching(tmp_path / "m", model) as memory:
        with_history(memory)
        ann = memory.user("ann")
        ann.chat("new", QUESTION)
        assert "search_memory" in model.bound_tools[0]  # offered: "new" has no topic yet
        values = memory.state(ann.thread("new"))
        (event,) = [e for e in values["events"] if e["kind"] == "memory_search"]
        assert ("more in the user's other threads" in event["detail"]) is found
        answered_with = str(model.calls[-1][0].content)
        assert ("Gion" in answered_with) is found  # the 2024 messages, or none before 2001
        assert memory.check(ann.thread("new")).ok


def test_the_agents_search_memory_searches_the_users_other_threads(tmp_path: Path) -> None:
    from test_responder_search import SearchingModel

    with open_memory(tmp_path / "m") as memory:
        with_history(memory)
        model = SearchingModel(args={"query": ASKED})
        agent = create_agent(model, [], middleware=[TopicMemoryMiddleware(memory)])
        config = {"configurable": {"thread_id": "new", "user_id": "ann"}}
        result = agent.invoke({"messages": [HumanMessage(QUESTION)]}, config)
        (reply,) = [m for m in result["messages"] if isinstance(m, ToolMessage)]
        assert "Your other conversations hold" in str(reply.content)
        first, after = (str(call[0].content) for call in model.calls[-2:])
        assert "Gion" not in first
        line = next(line for line in after.splitlines() if "Gion" in line)
        assert "(thread “history”)" in line


def test_a_search_that_fails_degrades_the_request_not_the_turn(
    memory: TopicMemory, responder: ActivatingResponder, caplog: pytest.LogCaptureFixture
) -> None:
    """Invariant 4: the other threads unsearchable (say, the registry unreadable)."""
    from langgraph_topics.scope.topic_reading import ScopeReading

    def broken(query: str, since: Any, until: Any) -> Any:
        raise OSError("users/ann/threads.jsonl: Input/output error")

    stored = memory.user("ann").thread("new")
    with caplog.at_level(logging.WARNING):
        answer = memory.chat(
            stored, QUESTION, user_id="ann", scope_quotes=ScopeReading([], searcher=broken)
        )
    assert answer == "answered" and responder.calls[0] and not responder.calls[-1]
    assert any("the other threads not searched: OSError" in r.getMessage() for r in caplog.records)
    assert memory.check(stored).ok
