"""A user's thread is run one way: its checkpoints under one thread id (issue 40).

``TopicMemory.user`` (and ``TopicMemoryMiddleware``) keep a user's thread ``T`` checkpointed
under its stored id; a user-scope run of the graph itself (LangGraph Server, Studio,
``graph.invoke``) keeps it under the application's ``T``. Both share the thread's stores, so
a thread begun one way is refused to the other with one line, before anything is read or
written (``scope/checkpoint_home.py``); each way alone, a plain thread, and ``forget`` are
as they were.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runner import run_cli
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from test_middleware_user_scope import Agent
from test_user_scope import FACT, QUESTION, open_memory
from test_user_scope_bare_run import bare_run, prompt_of

from langgraph_topics import TopicMemory
from langgraph_topics.errors import InputError
from langgraph_topics.graph.builder import build_graph
from langgraph_topics.scope.registry import FileScopeRegistry
from langgraph_topics.scope.threads import scoped_thread_id

TURNS = [
    "I am planning a walking trip through the Alentejo in May.",
    "Which towns should I stay in along the way?",
    "How far is Évora from Monsaraz on foot?",
]
THROUGH_MEMORY = (
    r"^thread 't1' of user 'ann' is run through TopicMemory\.user or TopicMemoryMiddleware"
)
THROUGH_GRAPH = r"^thread 't1' of user 'ann' is run as a graph run on the application's thread id"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[TopicMemory]:
    with open_memory(tmp_path / "memory", memory_scope="user") as opened:
        yield opened


def files_of(memory: TopicMemory) -> dict[str, tuple[int, int]]:
    """Every file of the data directory with its size and modification time.

    SQLite's shared-memory files are left out: a reader maps them.
    """
    root = Path(memory.settings.data_dir)
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith("-shm")
    }


def memory_checkpoint(memory: TopicMemory, user: str, thread: str) -> Any:
    """The memory's newest checkpoint of the user's thread under its stored id (None: none)."""
    return memory.checkpointer.get_tuple(memory.run_config(scoped_thread_id(user, thread)))


def test_a_thread_run_through_topic_memory_is_refused_to_a_graph_run(
    memory: TopicMemory,
) -> None:
    ann = memory.user("ann")
    ann.chat("t1", FACT)
    ann.chat("t1", TURNS[0])
    graph = build_graph(InMemorySaver())  # the server's checkpointer
    before = files_of(memory)
    with pytest.raises(InputError, match=THROUGH_MEMORY) as raised:
        bare_run(graph, "t1", QUESTION, user="ann", services=memory.services)
    message = str(raised.value)
    assert "\n" not in message
    assert message.endswith("run it that way, or use another thread id")
    # Nothing read into a checkpoint, nothing written: no input pending under "t1".
    assert graph.get_state({"configurable": {"thread_id": "t1"}}).values == {}
    assert files_of(memory) == before
    # The thread goes on its own way, and its checkpoints match its stores.
    ann.chat("t1", QUESTION)
    said = [m["content"] for m in memory.transcript(ann.thread("t1")) if m["role"] == "user"]
    assert said == [FACT, TURNS[0], QUESTION]
    assert memory.check(ann.thread("t1")).ok


def test_a_thread_run_as_a_graph_run_is_refused_to_topic_memory(memory: TopicMemory) -> None:
    graph = build_graph(InMemorySaver())
    bare_run(graph, "t1", FACT, user="ann", services=memory.services)
    bare_run(graph, "t1", TURNS[0], user="ann", services=memory.services)
    before = files_of(memory)
    ann = memory.user("ann")
    for attempt in (
        lambda: ann.chat("t1", QUESTION),
        lambda: ann.import_messages("t1", [HumanMessage("An imported line.")]),
        lambda: memory.user("ann", scope="thread").chat("t1", QUESTION),
        lambda: ann.context("t1", QUESTION),
    ):
        with pytest.raises(InputError, match=THROUGH_GRAPH) as raised:
            attempt()
        assert "(checkpoints under 't1')" in str(raised.value)
        assert "\n" not in str(raised.value)
    assert memory_checkpoint(memory, "ann", "t1") is None
    assert files_of(memory) == before
    # The graph runs go on.
    result = bare_run(graph, "t1", QUESTION, user="ann", services=memory.services)
    said = [m.content for m in result["messages"] if isinstance(m, HumanMessage)]
    assert said == [FACT, TURNS[0], QUESTION]


def test_each_way_alone_runs_over_several_turns_and_reads_the_other_ways_threads(
    memory: TopicMemory,
) -> None:
    ann = memory.user("ann")
    graph = build_graph(InMemorySaver())
    ann.chat("mem", FACT)
    for text in TURNS:
        ann.chat("mem", text)
        bare_run(graph, "app", text, user="ann", services=memory.services)
    registry = memory.scope_registry
    assert registry.home("ann", "mem") == "stored"
    assert registry.home("ann", "app") == "app"
    assert [t["thread_id"] for t in ann.threads()] == ["mem", "app"]
    # A graph run still reads the thread TopicMemory runs (the other way round, only what
    # the graph's thread split: its unsplit messages are in the server's checkpointer).
    result = bare_run(graph, "app", QUESTION, user="ann", services=memory.services)
    assert "(thread “mem”) user: My sister Greta lives in Lisbon" in prompt_of(result)
    assert memory.check(ann.thread("mem")).ok


def test_the_middleware_runs_a_thread_as_topic_memory_does(memory: TopicMemory) -> None:
    agent = Agent(memory)
    agent.say(FACT, "t1", "ann")
    assert memory.scope_registry.home("ann", "t1") == "stored"
    with pytest.raises(InputError, match=THROUGH_MEMORY):
        bare_run(build_graph(InMemorySaver()), "t1", QUESTION, user="ann", services=memory.services)
    memory.user("ann").chat("t1", QUESTION)  # the same thread, the same way
    # A thread a graph run began is refused to the agent before its model is called.
    bare_run(build_graph(InMemorySaver()), "t2", FACT, user="ann", services=memory.services)
    calls = len(agent.requests())
    with pytest.raises(InputError, match=THROUGH_GRAPH.replace("t1", "t2")):
        agent.say(QUESTION, "t2", "ann")
    assert len(agent.requests()) == calls
    assert memory_checkpoint(memory, "ann", "t2") is None


def test_two_users_with_the_same_thread_name_keep_their_own_ways(memory: TopicMemory) -> None:
    graph = build_graph(InMemorySaver())
    memory.user("ann").chat("t1", FACT)
    other = build_graph(InMemorySaver())  # bob's server: his "t1" is not ann's checkpoint
    bare_run(
        other,
        "t1",
        "My cousin Pavel repairs bicycles in Brno.",
        user="bob",
        services=memory.services,
    )
    bare_run(other, "t1", QUESTION, user="bob", services=memory.services)
    memory.user("ann").chat("t1", QUESTION)
    with pytest.raises(InputError, match=THROUGH_MEMORY):
        bare_run(graph, "t1", "And her bees?", user="ann", services=memory.services)
    with pytest.raises(InputError, match=r"^thread 't1' of user 'bob' is run as a graph run"):
        memory.user("bob").chat("t1", "And my cousin?")
    assert memory.scope_registry.home("ann", "t1") == "stored"
    assert memory.scope_registry.home("bob", "t1") == "app"


def test_a_plain_thread_reads_no_registry_and_records_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    original = FileScopeRegistry._read

    def counted(self: FileScopeRegistry, user_id: str) -> Any:
        reads.append(user_id)
        return original(self, user_id)

    monkeypatch.setattr(FileScopeRegistry, "_read", counted)
    with open_memory(tmp_path / "thread-scope") as memory:  # the default: thread scope
        graph = build_graph(InMemorySaver())
        memory.chat("t1", FACT)
        memory.chat("t1", QUESTION)
        bare_run(graph, "t1", FACT, services=memory.services)
        bare_run(graph, "t2", FACT, user="ann", services=memory.services)  # thread scope
        bare_run(graph, "t2", QUESTION, user="ann", services=memory.services)
        assert reads == []
        assert not (tmp_path / "thread-scope" / "users").exists()
        assert memory.check("t1").ok
    with open_memory(tmp_path / "user-scope", memory_scope="user") as memory:
        memory.chat("plain", FACT)  # a plain thread in a user-scope memory
        bare_run(build_graph(InMemorySaver()), "p", FACT, services=memory.services)
        assert reads == []


def test_forget_erases_the_record_and_leaves_nothing(memory: TopicMemory) -> None:
    ann = memory.user("ann")
    ann.chat("t1", FACT)
    graph = build_graph(InMemorySaver())
    bare_run(graph, "t2", TURNS[0], user="ann", services=memory.services)
    assert memory.scope_registry.home("ann", "t1") == "stored"
    ann.forget()
    assert ann.remnants() == []
    assert memory.scope_registry.home("ann", "t1") is None
    assert memory.scope_registry.home("ann", "t2") is None
    # ann's "t1" starts again, and may now be run the other way.
    result = bare_run(graph, "t1", QUESTION, user="ann", services=memory.services)
    assert "Lisbon" not in prompt_of(result)
    assert memory.scope_registry.home("ann", "t1") == "app"
    ann.forget()
    assert ann.remnants() == []


def strip_homes(memory: TopicMemory, user: str) -> None:
    """The user's registry as a version before homes were recorded wrote it."""
    path = FileScopeRegistry(Path(memory.settings.data_dir)).user_directory(user) / "threads.jsonl"
    kept = []
    for line in path.read_text("ascii").splitlines():
        value = json.loads(line)
        value.pop("checkpoints", None)
        if "joined" in value:
            kept.append(json.dumps(value) + "\n")
    path.write_text("".join(kept), "ascii")


def test_a_thread_registered_before_homes_were_recorded_is_recorded_by_its_own_way(
    memory: TopicMemory,
) -> None:
    ann = memory.user("ann")
    graph = build_graph(InMemorySaver())
    ann.chat("mem", FACT)
    bare_run(graph, "app", TURNS[0], user="ann", services=memory.services)
    strip_homes(memory, "ann")
    assert memory.scope_registry.home("ann", "mem") is None
    # Its next run finds its checkpoints where it keeps them: recorded, then the rule holds.
    ann.chat("mem", QUESTION)
    bare_run(graph, "app", TURNS[1], user="ann", services=memory.services)
    assert memory.scope_registry.home("ann", "mem") == "stored"
    assert memory.scope_registry.home("ann", "app") == "app"
    with pytest.raises(InputError, match="run as a graph run"):
        ann.chat("app", TURNS[2])
    with pytest.raises(InputError, match="run through TopicMemory.user"):
        bare_run(graph, "mem", TURNS[2], user="ann", services=memory.services)


def test_a_registered_thread_without_checkpoints_is_not_recorded_on_doubt(
    memory: TopicMemory,
) -> None:
    """A thread registered by an earlier version with no checkpoint the run can see: it may
    be the other way's, so the run goes on as before and records nothing."""
    memory.scope_registry.add("ann", "t1")  # no home: as an earlier version registered it
    memory.user("ann").chat("t1", FACT)
    assert memory.scope_registry.home("ann", "t1") is None
    memory.user("ann").chat("t1", QUESTION)  # now its checkpoints are here
    assert memory.scope_registry.home("ann", "t1") == "stored"


def test_of_two_processes_recording_a_thread_at_once_the_first_line_wins(
    memory: TopicMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = memory.scope_registry
    assert isinstance(registry, FileScopeRegistry)
    original = FileScopeRegistry._append

    def raced(self: FileScopeRegistry, user_id: str, thread_id: str, **options: Any) -> Any:
        if options.get("home") == "stored":  # a graph run recorded the thread just before
            original(self, user_id, thread_id, joins=False, home="app")
        return original(self, user_id, thread_id, **options)

    monkeypatch.setattr(FileScopeRegistry, "_append", raced)
    with pytest.raises(InputError, match=THROUGH_GRAPH):
        memory.user("ann").chat("t1", FACT)
    assert memory_checkpoint(memory, "ann", "t1") is None
    assert registry.home("ann", "t1") == "app"


def test_on_postgres_a_thread_is_run_one_way(postgres_uri: str, tmp_path: Path) -> None:
    from test_user_scope_postgres import open_shared

    with open_shared(postgres_uri, tmp_path / "worker-a", memory_scope="user") as memory:
        ann = memory.user("ann")
        ann.chat("t1", FACT)
        graph = build_graph(memory.checkpointer)
        with pytest.raises(InputError, match=THROUGH_MEMORY):
            bare_run(graph, "t1", QUESTION, user="ann", services=memory.services)
        assert graph.get_state({"configurable": {"thread_id": "t1"}}).values == {}
        bare_run(graph, "t2", TURNS[0], user="ann", services=memory.services)
        bare_run(graph, "t2", TURNS[1], user="ann", services=memory.services)
        with pytest.raises(InputError, match=THROUGH_GRAPH.replace("t1", "t2")):
            ann.chat("t2", QUESTION)
        assert memory_checkpoint(memory, "ann", "t2") is None
        ann.chat("t1", QUESTION)
        # Another worker on the same database reads the same records.
        with open_shared(postgres_uri, tmp_path / "worker-b", memory_scope="user") as other:
            assert other.scope_registry.home("ann", "t1") == "stored"
            assert other.scope_registry.home("ann", "t2") == "app"
            with pytest.raises(InputError, match=THROUGH_GRAPH.replace("t1", "t2")):
                other.user("ann").chat("t2", QUESTION)
        ann.forget()
        assert ann.remnants() == []
        assert memory.scope_registry.home("ann", "t1") is None


def test_a_graph_run_that_skips_the_graphs_stream_is_refused_by_its_first_node(
    memory: TopicMemory,
) -> None:
    """The graph compiled again from its builder (or run inside an application's graph)
    has no ``TopicGraph.stream`` to check the run first: its first node does."""
    memory.user("ann").chat("t1", FACT)
    graph = build_graph().builder.compile(checkpointer=InMemorySaver())
    with pytest.raises(InputError, match=THROUGH_MEMORY):
        bare_run(graph, "t1", QUESTION, user="ann", in_context=True, services=memory.services)
    # A thread of its own it runs as before, and records it as the graph's.
    bare_run(graph, "t2", QUESTION, user="ann", in_context=True, services=memory.services)
    assert memory.scope_registry.home("ann", "t2") == "app"
    assert [t["thread_id"] for t in memory.user("ann").threads()] == ["t1"]  # not registered


def test_the_command_line_refuses_a_thread_a_graph_run_keeps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "cli"
    with open_memory(data, memory_scope="user") as memory:
        bare_run(build_graph(InMemorySaver()), "t1", FACT, user="ann", services=memory.services)
        before = files_of(memory)
    conversation = tmp_path / "conversation.jsonl"
    conversation.write_text(json.dumps({"role": "user", "content": TURNS[0]}) + "\n", "utf-8")
    where = ("--data-dir", str(data), "--user", "ann", "--thread", "t1")
    for command, stdin in (
        (("chat", *where), QUESTION),
        (("import", str(conversation), *where), None),
    ):
        status, _, errors = run_cli(capsys, *command, stdin=stdin)
        assert status == 2
        assert (
            len(errors) == 1 and "is run as a graph run on the application's thread id" in errors[0]
        )
    with open_memory(data, memory_scope="user") as memory:
        assert files_of(memory) == before
