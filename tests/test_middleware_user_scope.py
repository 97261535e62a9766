"""``TopicMemoryMiddleware`` with a user id: one memory per user across the agent's threads.

The agent's thread ids are the application's; in ``user`` scope a run naming user ``U``
(``configurable.user_id`` or ``context.user_id``, as the graph reads them) works on U's thread
of that name and its model request quotes U's other threads, as the graph's window does
(``test_user_scope.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from test_user_scope import FACT, HOSTILE_USERS, QUESTION, open_memory

from langgraph_topics import TopicMemory
from langgraph_topics.errors import InputError
from langgraph_topics.middleware import TopicMemoryMiddleware
from langgraph_topics.middleware.fakes import ToolCallingFakeModel
from langgraph_topics.scope.threads import scoped_thread_id

OLAF = "My brother Olaf moved to Tromsø to study whales."
OLAF_QUESTION = "Where did my brother Olaf move?"


@dataclass
class AppContext:
    """An application's run context naming its user."""

    user_id: str | None = None


@tool
def lookup(query: str) -> str:
    """Look the question up in the reference notes."""
    return f"Reference notes on {query[:60]}"


class Agent:
    """An agent on ``memory`` whose model records every request it is sent."""

    def __init__(self, memory: TopicMemory, *, checkpointer: bool = True) -> None:
        self.model = ToolCallingFakeModel(triggers={"look up": "lookup"})
        self.agent = create_agent(
            self.model,
            [lookup],
            middleware=[TopicMemoryMiddleware(memory)],
            context_schema=AppContext,
            checkpointer=InMemorySaver() if checkpointer else None,
        )

    def say(self, text: str, thread: str, user: str | None = None, **config: Any) -> str:
        """One user turn; the system prompt of its first model request."""
        before = len(self.model.calls)
        configurable = {"thread_id": thread, **({} if user is None else {"user_id": user})}
        self.agent.invoke(
            {"messages": [HumanMessage(text)]},
            {"configurable": configurable},
            context=config.get("context"),
        )
        return system_text(self.model.calls[before])

    def requests(self, since: int = 0) -> list[list[BaseMessage]]:
        return self.model.calls[since:]


def system_text(request: list[BaseMessage]) -> str:
    first = request[0]
    assert isinstance(first, SystemMessage)
    return str(first.content)


def test_a_fact_of_thread_one_reaches_the_model_request_in_thread_two(tmp_path: Path) -> None:
    with open_memory(tmp_path / "m", memory_scope="user") as memory:
        agent = Agent(memory)
        agent.say(FACT, "t1", "ann")
        prompt = agent.say(QUESTION, "t2", "ann")
        line = next(line for line in prompt.splitlines() if "Lisbon" in line)
        assert "(thread “t1”)" in line and line.startswith("[20")
        # The user named in the run's context works the same; a question about something
        # else quotes nothing.
        prompt = agent.say(QUESTION, "t3", context=AppContext(user_id="ann"))
        assert "(thread “t1”)" in prompt and "Lisbon" in prompt
        assert "Lisbon" not in agent.say("Any news on quantum physics?", "t4", "ann")
        # Each thread is the user's, stored apart; the quote moved nothing between threads.
        ann = memory.user("ann")
        assert [t["thread_id"] for t in ann.threads()] == ["t1", "t2", "t3", "t4"]
        assert not memory.exists("t2")
        assert all("Lisbon" not in m["content"] for m in memory.transcript(ann.thread("t2")))
        for name in ("t1", "t2"):
            assert memory.check(ann.thread(name)).ok


def test_the_quotes_stay_through_the_tool_rounds_of_the_turn(tmp_path: Path) -> None:
    with open_memory(tmp_path / "m", memory_scope="user") as memory:
        agent = Agent(memory)
        agent.say(FACT, "t1", "ann")
        before = len(agent.model.calls)
        agent.say(f"{QUESTION} Please look up the details.", "t2", "ann")
        calls = agent.requests(before)
        assert len(calls) == 2 and isinstance(calls[1][-1], ToolMessage)  # a tool round
        assert all("(thread “t1”)" in system_text(call) for call in calls)


def test_with_the_scope_set_to_the_thread_the_fact_does_not_reach_it(tmp_path: Path) -> None:
    with open_memory(tmp_path / "m") as memory:
        assert memory.settings.memory_scope == "thread"
        agent = Agent(memory)
        agent.say(FACT, "t1", "ann")
        assert "Lisbon" not in agent.say(QUESTION, "t2", "ann")
        # The agent's threads are its own thread ids, as without a user.
        assert memory.exists("t1") and memory.exists("t2")
        assert memory.user("ann").threads() == []


def test_two_users_with_the_same_thread_names_see_nothing_of_each_other(tmp_path: Path) -> None:
    """One agent, one memory, the same thread names: the memory keeps the users apart.

    The agent runs without a checkpointer (the memory keeps the conversation): an agent's
    own checkpointer keys its ``messages`` by the thread id alone, so two users sharing an
    agent thread id share the agent's state whatever the memory does (docs/users.md).
    """
    with open_memory(tmp_path / "m", memory_scope="user") as memory:
        agent = Agent(memory, checkpointer=False)
        agent.say(FACT, "t1", "ann")
        agent.say(OLAF, "t1", "bob")
        ann_prompt = agent.say(OLAF_QUESTION, "t2", "ann")
        bob_prompt = agent.say(QUESTION, "t2", "bob")
        assert "Olaf" not in ann_prompt.replace(OLAF_QUESTION, "") and "Tromsø" not in ann_prompt
        assert "Greta" not in bob_prompt.replace(QUESTION, "") and "Lisbon" not in bob_prompt
        assert "Tromsø" in agent.say(OLAF_QUESTION, "t3", "bob")
        ann, bob = memory.user("ann"), memory.user("bob")
        ann_ids = {m["id"] for m in memory.transcript(ann.thread("t1"))}
        bob_ids = {m["id"] for m in memory.transcript(bob.thread("t1"))}
        assert ann_ids and bob_ids and not ann_ids & bob_ids
        assert not memory.exists("t1")


@pytest.mark.parametrize("user", [u for u in HOSTILE_USERS if u])
def test_a_hostile_user_id_gets_one_line_and_nothing_is_written(tmp_path: Path, user: str) -> None:
    with open_memory(tmp_path / "m", memory_scope="user") as memory:
        agent = Agent(memory)
        with pytest.raises(InputError) as raised:
            agent.say("hello", "t1", user)
        message = str(raised.value)
        assert "\n" not in message and message.startswith("invalid user id")
        assert agent.requests() == []  # the model was never called
        assert not memory.exists("t1")
        assert not (tmp_path / "m" / "users").exists()
        assert not (tmp_path / "m" / "threads").exists() or not any(
            (tmp_path / "m" / "threads").iterdir()
        )


def test_an_empty_user_id_is_no_user(tmp_path: Path) -> None:
    """LangGraph Server sends ``configurable.user_id=""`` without authentication."""
    with open_memory(tmp_path / "m", memory_scope="user") as memory:
        agent = Agent(memory)
        agent.say(FACT, "t1", "")
        assert memory.exists("t1")  # the agent's own thread, as without a user


def test_a_thread_stored_as_another_users_is_refused(tmp_path: Path) -> None:
    """Refused before the memory reads or writes anything (the agent's own checkpointer, when
    it has one, saved the run's input before any middleware ran: none here)."""
    with open_memory(tmp_path / "m", memory_scope="user") as memory:
        agent = Agent(memory, checkpointer=False)
        agent.say(FACT, "t1", "ann")
        stored = scoped_thread_id("ann", "t1")
        before = memory.transcript(stored)
        with pytest.raises(InputError, match="belongs to another user"):
            agent.say("What did I say?", stored, "bob")
        assert memory.transcript(stored) == before
        assert not memory.user("bob").threads()
        # Ann may name her stored thread as it is: the same thread as her "t1".
        agent.say("And her bees?", stored, "ann")
        assert [m["content"] for m in memory.transcript(stored) if m["role"] == "user"] == [
            FACT,
            "And her bees?",
        ]


def test_the_memory_thread_of_a_run_and_of_its_tools(tmp_path: Path) -> None:
    """The hooks and the memory's tools (``search_memory``, ``activate_topic``…) agree."""
    from langgraph.runtime import ExecutionInfo, Runtime

    def runtime(user: str | None) -> Runtime[Any]:
        info = ExecutionInfo(checkpoint_id="", checkpoint_ns="", task_id="", thread_id="t1")
        return Runtime(context=AppContext(user_id=user), execution_info=info)

    for scope, expected in (("user", scoped_thread_id("ann", "t1")), ("thread", "t1")):
        with open_memory(tmp_path / scope, memory_scope=scope) as memory:
            middleware = TopicMemoryMiddleware(memory)
            assert middleware.memory_thread(runtime("ann"))[0] == expected
            assert middleware.memory_thread(runtime(None)) == ("t1", None)
            assert middleware._tool_thread() == "default"  # outside a run


def test_a_tool_called_in_a_users_run_sees_the_users_thread(tmp_path: Path) -> None:
    with open_memory(tmp_path / "m", memory_scope="user") as memory:
        middleware = TopicMemoryMiddleware(memory)

        @tool
        def whose(query: str) -> str:
            """Name the memory's thread of this run."""
            return middleware._tool_thread()

        model = ToolCallingFakeModel(triggers={"whose": "whose"})
        agent = create_agent(model, [whose], middleware=[middleware], context_schema=AppContext)
        for config, context in (
            ({"configurable": {"thread_id": "t1", "user_id": "ann"}}, None),
            ({"configurable": {"thread_id": "t1"}}, AppContext(user_id="ann")),
        ):
            result = agent.invoke({"messages": [HumanMessage("whose?")]}, config, context=context)
            answers = [m for m in result["messages"] if isinstance(m, ToolMessage)]
            assert answers[-1].content == scoped_thread_id("ann", "t1")


def test_an_async_run_reads_the_user_as_a_sync_one(tmp_path: Path) -> None:
    import asyncio

    with open_memory(tmp_path / "m", memory_scope="user") as memory:
        agent = Agent(memory)

        async def say(text: str, thread: str) -> None:
            config: Any = {"configurable": {"thread_id": thread}}
            await agent.agent.ainvoke(
                {"messages": [HumanMessage(text)]}, config, context=AppContext(user_id="ann")
            )

        asyncio.run(say(FACT, "t1"))
        asyncio.run(say(QUESTION, "t2"))
        assert "(thread “t1”)" in system_text(agent.model.calls[-1])
        assert [t["thread_id"] for t in memory.user("ann").threads()] == ["t1", "t2"]
