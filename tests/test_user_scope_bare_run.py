"""A user-scope run of the graph itself reads the user's other threads (issue 40).

The graph run as LangGraph Server runs it: the compiled graph with a checkpointer (and a
store), the user in ``context.user_id`` or ``configurable.user_id``, no ``TopicMemory``
around the turn. The graph's own stream reads the other threads before the run starts.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from test_user_scope import FACT, QUESTION, open_memory

from langgraph_topics import TopicMemory
from langgraph_topics import services as services_module
from langgraph_topics.errors import InputError
from langgraph_topics.graph.builder import build_graph
from langgraph_topics.scope.threads import scoped_thread_id
from langgraph_topics.services import TopicContext, TopicServices
from langgraph_topics.settings import Settings

OTHER = "Which tomato varieties grow well on a balcony?"


def bare_run(
    graph: Any,
    thread: str,
    text: str,
    *,
    user: str | None = None,
    in_context: bool = False,
    services: TopicServices | None = None,
) -> dict[str, Any]:
    """One chat turn of ``graph`` on ``thread``, the user named as a server or a client would."""
    configurable: dict[str, Any] = {"thread_id": thread}
    if user is not None and not in_context:
        configurable["user_id"] = user
    context = TopicContext(services=services, user_id=user if in_context else None)
    message = HumanMessage(text, id=f"{thread}-{len(text)}-{user}")
    result: dict[str, Any] = graph.invoke(
        {"messages": [message]}, {"configurable": configurable}, context=context
    )
    return result


def prompt_of(result: dict[str, Any]) -> str:
    return str(result["context"]["system_prompt"])


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[TopicMemory]:
    with open_memory(tmp_path / "memory", memory_scope="user") as opened:
        yield opened


def test_a_fact_said_through_topic_memory_is_quoted_in_a_bare_run_on_thread_three(
    memory: TopicMemory,
) -> None:
    memory.user("ann").chat("t1", FACT)
    memory.user("ann").chat("t2", OTHER)
    graph = build_graph(InMemorySaver())  # the server's checkpointer, not the memory's
    result = bare_run(graph, "t3", QUESTION, user="ann", services=memory.services)
    line = next(line for line in prompt_of(result).splitlines() if "Lisbon" in line)
    assert "(thread “t1”)" in line and line.startswith("[20")
    assert {q["thread_id"] for q in result["context"]["scope_quotes"]} == {"t1"}
    assert result["context"]["tokens"] <= result["context"]["budget"]
    # The run's thread is ann's thread "t3": registered, its stores kept as hers.
    assert [t["thread_id"] for t in memory.user("ann").threads()] == ["t1", "t2", "t3"]
    assert result["memory_thread"] == scoped_thread_id("ann", "t3")
    ann_t3 = memory.services.stores(scoped_thread_id("ann", "t3")).topic_store
    assert ann_t3 is not None
    # ... which TopicMemory.user turns of ann then read as one of hers.
    assert memory.user("ann").recall("t4", QUESTION)  # t1 at least


def test_a_fact_said_in_a_bare_run_is_quoted_in_another_bare_run(memory: TopicMemory) -> None:
    graph = build_graph(InMemorySaver())
    bare_run(graph, "t1", FACT, user="ann", in_context=True, services=memory.services)
    bare_run(graph, "t2", OTHER, user="ann", services=memory.services)
    result = bare_run(graph, "t3", QUESTION, user="ann", services=memory.services)
    assert "(thread “t1”) user: My sister Greta lives in Lisbon" in prompt_of(result)
    # Another user with the same thread names sees nothing of ann's.
    bare_run(graph, "b1", "I collect old maps of Prague.", user="bob", services=memory.services)
    other = bare_run(graph, "b3", QUESTION, user="bob", services=memory.services)
    assert "Lisbon" not in prompt_of(other)
    assert not any(q["thread_id"] == "t1" for q in other["context"].get("scope_quotes", []))


def test_another_user_with_the_same_thread_names_sees_nothing(memory: TopicMemory) -> None:
    memory.user("ann").chat("t1", FACT)
    memory.user("bob").chat("t1", "My cousin Pavel repairs bicycles in Brno.")
    graph = build_graph(InMemorySaver())
    result = bare_run(graph, "t3", QUESTION, user="bob", services=memory.services)
    assert "Lisbon" not in prompt_of(result)
    assert {q["thread_id"] for q in result["context"].get("scope_quotes", [])} <= {"t1"}
    quoted = [q["message_id"] for q in result["context"].get("scope_quotes", [])]
    ann_ids = {m["id"] for m in memory.transcript(scoped_thread_id("ann", "t1"))}
    assert not ann_ids & set(quoted)


def test_in_thread_scope_a_bare_run_quotes_nothing_and_its_prompt_is_unchanged(
    tmp_path: Path,
) -> None:
    fixed = datetime(2026, 5, 8, 10, 2, tzinfo=UTC)
    with open_memory(tmp_path / "m") as memory:  # memory_scope "thread", the default
        memory.services.clock = lambda: fixed
        memory.user("ann").chat("t1", FACT)
        graph = build_graph(InMemorySaver())
        with_user = bare_run(graph, "t3", QUESTION, user="ann", services=memory.services)
        without = bare_run(graph, "p3", QUESTION, services=memory.services)
        assert "Lisbon" not in prompt_of(with_user)
        assert prompt_of(with_user) == prompt_of(without)
        assert "memory_thread" not in with_user
        assert [t["thread_id"] for t in memory.user("ann").threads()] == ["t1"]  # none added


def test_a_thread_is_refused_to_a_run_of_another_scope_or_user(memory: TopicMemory) -> None:
    graph = build_graph(InMemorySaver())
    bare_run(graph, "plain", "Hello there.", services=memory.services)  # no user: thread's own
    with pytest.raises(InputError, match="holds a thread-scope memory") as raised:
        bare_run(graph, "plain", QUESTION, user="ann", services=memory.services)
    assert "\n" not in str(raised.value)
    bare_run(graph, "t1", FACT, user="ann", services=memory.services)
    with pytest.raises(InputError, match="belongs to another user's memory scope"):
        bare_run(graph, "t1", QUESTION, user="bob", services=memory.services)
    # Refused before LangGraph saved the input: nothing of bob's is pending in ann's thread.
    assert not graph.get_state({"configurable": {"thread_id": "t1"}}).next
    with pytest.raises(InputError, match="holds a user's memory"):  # by the first node
        bare_run(graph, "t1", QUESTION, services=memory.services)
    # ann's thread is whole: her next turn on it goes on.
    assert bare_run(graph, "t1", QUESTION, user="ann", services=memory.services)["messages"]


def test_a_server_run_with_a_platform_store_reads_the_users_other_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``langgraph dev``'s way: the graph copied with the server's checkpointer and store,
    services from the environment (the platform store holds the topics)."""
    monkeypatch.delenv("LANGGRAPH_TOPICS_STORE", raising=False)
    monkeypatch.setenv("LANGGRAPH_TOPICS_MEMORY_SCOPE", "user")
    with open_memory(tmp_path / "unused") as donor:  # its roles and embedder, loaded once
        services = TopicServices.open(
            Settings(data_dir=tmp_path / "worker", budget_tokens=2000),
            roles=donor.services.roles,
            embedder=donor.services.embedder,
        )
        assert services.settings.memory_scope == "user"
        monkeypatch.setattr(services_module, "_default_services", services)
        store = InMemoryStore()
        graph = build_graph().copy(update={"checkpointer": InMemorySaver(), "store": store})
        bare_run(graph, "t1", FACT, user="ann")
        bare_run(graph, "t2", OTHER, user="ann")
        result = bare_run(graph, "t3", QUESTION, user="ann")
        assert "(thread “t1”) user: My sister Greta lives in Lisbon" in prompt_of(result)
        assert "Lisbon" not in prompt_of(bare_run(graph, "b3", QUESTION, user="bob"))
        users = store.search(("langgraph_topics", "users"), limit=10)
        assert users, "the registry lives in the server's store"


def test_a_bare_run_on_postgres_reads_topic_memory_threads(
    postgres_uri: str, tmp_path: Path
) -> None:
    from test_user_scope_postgres import open_shared

    with open_shared(postgres_uri, tmp_path / "worker-a", memory_scope="user") as memory:
        memory.user("ann").chat("t1", FACT)
        memory.user("ann").chat("t2", OTHER)
        graph = build_graph(memory.checkpointer)
        result = bare_run(graph, "t3", QUESTION, user="ann", services=memory.services)
        assert "(thread “t1”) user: My sister Greta lives in Lisbon" in prompt_of(result)
        assert "t3" in [t["thread_id"] for t in memory.user("ann").threads()]
        other = bare_run(graph, "b3", QUESTION, user="bob", services=memory.services)
        assert "Lisbon" not in prompt_of(other)
        # forget --user: the graph run's checkpoints in the shared database go too.
        memory.user("ann").forget()
        assert memory.user("ann").remnants() == []
        assert memory.checkpointer.get_tuple({"configurable": {"thread_id": "t3"}}) is None
        assert memory.checkpointer.get_tuple({"configurable": {"thread_id": "b3"}}) is not None


def test_a_topic_memory_turn_inside_a_run_naming_a_user_keeps_its_thread(
    memory: TopicMemory,
) -> None:
    """``run_turn`` in an application's node: the parent run's user is not the turn's."""
    from langchain_core.runnables import RunnableLambda

    step = RunnableLambda(lambda text: memory.chat("plain", text))
    config: Any = {"configurable": {"user_id": "ann"}}
    step.invoke(FACT, config)
    assert step.invoke(QUESTION, config)
    assert "memory_thread" not in memory.state("plain")
    assert memory.user("ann").threads() == []
    said = [m["content"] for m in memory.transcript("plain") if m["role"] == "user"]
    assert said == [FACT, QUESTION]


def test_forget_deletes_a_graph_runs_checkpoints_in_the_checkpointers_it_is_given(
    memory: TopicMemory,
) -> None:
    """A server's checkpoints of ann's threads go with her; bob's and a plain thread's stay."""
    server = InMemorySaver()
    graph = build_graph(server)
    bare_run(graph, "t1", FACT, user="ann", services=memory.services)
    bare_run(graph, "t2", OTHER, user="ann", services=memory.services)
    bare_run(graph, "b1", "I collect old maps of Prague.", user="bob", services=memory.services)
    bare_run(graph, "plain", "Hello there.", services=memory.services)
    ann = memory.user("ann")
    # The memory cannot see the server's checkpointer by itself: it has to be named.
    assert not any("application's thread" in line for line in ann.remnants())
    left = ann.remnants([server])
    assert "checkpoints of the application's thread 't1' (InMemorySaver)" in left
    assert "checkpoints of the application's thread 't2' (InMemorySaver)" in left
    ann.forget([server])
    assert ann.remnants([server]) == []
    for thread in ("t1", "t2"):
        assert server.get_tuple({"configurable": {"thread_id": thread}}) is None
    for kept in ("b1", "plain"):
        assert graph.get_state({"configurable": {"thread_id": kept}}).values["messages"]
    assert memory.user("bob").remnants([server])  # bob untouched


def test_forget_finds_a_graph_run_kept_in_the_memorys_own_checkpointer(
    memory: TopicMemory,
) -> None:
    """An application that runs the graph on the memory's checkpointer needs to name none."""
    graph = build_graph(memory.checkpointer)
    bare_run(graph, "t1", FACT, user="ann", services=memory.services)
    assert any("application's thread 't1'" in line for line in memory.user("ann").remnants())
    memory.user("ann").forget()
    assert memory.user("ann").remnants() == []
    assert memory.checkpointer.get_tuple({"configurable": {"thread_id": "t1"}}) is None
