"""Topics in the platform store: a graph compiled with a store, and ``langgraph dev`` under load."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from langgraph_topics import services as services_module
from langgraph_topics.bench.dev_server import portable_config
from langgraph_topics.cli.demo import load_script
from langgraph_topics.graph.builder import build_graph
from langgraph_topics.roles.protocols import Roles
from langgraph_topics.services import TopicContext, TopicServices
from langgraph_topics.settings import Settings
from langgraph_topics.stores.base_store_topics import NAMESPACE_PREFIX, BaseStoreTopicStore
from langgraph_topics.stores.embeddings import UseEmbedder
from langgraph_topics.stores.platform_store import (
    EMBEDDING_DIMENSIONS,
    embed_texts,
    platform_services,
    platform_store_wanted,
)

ROOT = Path(__file__).resolve().parents[1]
TURNS = 10


@pytest.fixture
def default_services(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: UseEmbedder, roles: Roles
) -> TopicServices:
    """The process default a run without services in its context gets, on a fresh data dir."""
    services = TopicServices.open(
        Settings(data_dir=tmp_path / "data", budget_tokens=600, keep_recent=4),
        roles=roles,
        embedder=embedder,
    )
    monkeypatch.setattr(services_module, "_default_services", services)
    monkeypatch.delenv("LANGGRAPH_TOPICS_STORE", raising=False)
    return services


def _chat(graph: Any, thread_id: str, turns: int, context: TopicContext | None = None) -> Any:
    texts = [line["text"] for line in load_script()]
    config: Any = {"configurable": {"thread_id": thread_id}}
    for turn in range(turns):
        message = HumanMessage(texts[turn % len(texts)], id=f"{thread_id}-u{turn}")
        graph.invoke({"messages": [message]}, config, context=context)
    return graph.get_state(config).values


def _topic_files(data_dir: Path) -> list[Path]:
    return sorted(data_dir.glob("threads/*/topics/*.jsonl"))


def test_a_graph_compiled_with_a_store_keeps_its_topics_there(
    default_services: TopicServices,
) -> None:
    store = InMemoryStore()
    graph = build_graph().builder.compile(checkpointer=InMemorySaver(), store=store)
    values = _chat(graph, "t1", TURNS)

    assert values["topics"], "no split happened: the test proves nothing"
    topics = BaseStoreTopicStore(store, "t1", visible=values["store_ranges"])
    assert len(topics.topic_ids()) == len(values["topics"])
    assert store.search((NAMESPACE_PREFIX,), limit=1), "nothing in the platform store"
    assert _topic_files(default_services.settings.data_dir) == []  # and nothing in JSONL files
    # Every user message exactly once: in the working set or in a topic of the store.
    working = [m.id for m in values["messages"]]
    stored = list(topics.message_ids())
    for turn in range(TURNS):
        assert (working + stored).count(f"t1-u{turn}") == 1, turn
    assert values["total_messages"] == len(working) + len(stored)


def test_services_given_in_the_context_keep_their_own_stores(
    default_services: TopicServices, tmp_path: Path, embedder: UseEmbedder, roles: Roles
) -> None:
    own = TopicServices.open(
        Settings(data_dir=tmp_path / "own", budget_tokens=600, keep_recent=4),
        roles=roles,
        embedder=embedder,
    )
    store = InMemoryStore()
    graph = build_graph().builder.compile(checkpointer=InMemorySaver(), store=store)
    values = _chat(graph, "t2", TURNS, context=TopicContext(services=own))
    assert values["topics"]
    assert _topic_files(tmp_path / "own")
    assert store.search((NAMESPACE_PREFIX,), limit=1) == []


def test_a_store_profile_in_the_environment_opts_out(
    default_services: TopicServices, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANGGRAPH_TOPICS_STORE", "embedded")
    store = InMemoryStore()
    graph = build_graph().builder.compile(checkpointer=InMemorySaver(), store=store)
    values = _chat(graph, "t3", TURNS)
    assert values["topics"]
    assert _topic_files(default_services.settings.data_dir)
    assert store.search((NAMESPACE_PREFIX,), limit=1) == []


def test_platform_services_are_derived_once_per_services_and_store(
    default_services: TopicServices,
) -> None:
    first, second = InMemoryStore(), InMemoryStore()
    derived = platform_services(default_services, first)
    assert platform_services(default_services, first) is derived
    assert platform_services(default_services, second) is not derived
    assert derived.roles is default_services.roles
    assert platform_store_wanted({}) and platform_store_wanted({"LANGGRAPH_TOPICS_STORE": ""})
    assert not platform_store_wanted({"LANGGRAPH_TOPICS_STORE": "postgres"})


def test_langgraph_json_indexes_the_store_with_the_package_embedder() -> None:
    index = json.loads((ROOT / "langgraph.json").read_text())["store"]["index"]
    assert index["dims"] == EMBEDDING_DIMENSIONS
    path, _, function = index["embed"].rpartition(":")
    assert (ROOT / path).resolve() == (ROOT / "langgraph_topics/stores/platform_store.py")
    assert function == "embed_texts"
    vectors = embed_texts(["a trip to Kyoto", "京都旅行"])
    assert [len(v) for v in vectors] == [EMBEDDING_DIMENSIONS] * 2
    # Served from another working directory, the file paths are made absolute.
    portable = portable_config(ROOT / "langgraph.json")
    assert portable["store"]["index"]["embed"] == f"{ROOT}/{path.removeprefix('./')}:{function}"
    assert portable["dependencies"] == [str(ROOT)]


def _two_thread_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> dict[str, Any]:
    """Run 2 threads × 16 turns at budget 600; assert every message and reply is found once."""
    from langgraph_topics.cli.main import main

    out = str(tmp_path / "out")
    status = main(
        ["bench", "server-load", "--threads", "2", "--turns", "16", "--budget", "600"]
        + ["--timeout", "300", "--run-timeout", "120", *extra, "--json", "--out", out]
    )
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert status == 0, report
    assert (report["sent"], report["completed"], report["failed"]) == (32, 32, 0)
    assert report["lost"] == 0 and report["duplicated"] == 0
    assert report["in_topics"] > 0 and report["topics"] > 0  # topics landed in the store
    assert report["replies"] == 32 and report["unaccounted"] == []
    assert report["in_topics"] + report["in_working_set"] == 64  # every message and reply once
    return report


def test_server_load_loses_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``bench server-load`` through ``langgraph dev``: 2 threads, every message found once.

    Splits wait for messages older than the last 20 (``keep_recent``); at budget 600 the last 20
    alone pass the trigger, so a split waits for 10 of them (``split_batch``): the first comes at
    turn 15, so 16 turns put topics in the platform store.
    """

    report = _two_thread_load(tmp_path, capsys)
    assert report["latency_ms"]["p50"] is not None
    assert json.loads((tmp_path / "out" / "server-load.json").read_text())["lost"] == 0


def test_server_load_keeps_topics_in_postgres(
    tmp_path: Path, postgres_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``bench server-load --postgres-uri``: the server's topics go to the database, none lost.

    The ``postgres`` profile under ``langgraph dev`` (``LANGGRAPH_TOPICS_STORE=postgres``): the
    check reads each thread's topics from the database as another worker would, and the
    platform store stays empty.
    """
    from langgraph.store.postgres import PostgresStore

    from langgraph_topics.stores.base_store_topics import stored_head

    report = _two_thread_load(tmp_path, capsys, "--postgres-uri", postgres_uri)
    assert report["topic_store"] == "postgres"
    assert report["platform_store_items"] == 0  # nothing went to the server's own store
    thread_ids = [thread["thread_id"] for thread in report["per_thread"]]
    assert len(thread_ids) == 2
    with PostgresStore.from_conn_string(postgres_uri) as store:
        for thread_id in thread_ids:
            assert stored_head(store, thread_id) > 0, thread_id  # its topics are in Postgres


def test_server_load_names_an_unreachable_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A database that does not answer stops the benchmark with one line, before any server."""
    from langgraph_topics.bench.dev_server import free_port
    from langgraph_topics.cli.main import main

    uri = f"postgresql://someone:secret@127.0.0.1:{free_port()}/nothing"
    with pytest.raises(SystemExit) as stopped:
        main(["bench", "server-load", "--postgres-uri", uri, "--out", str(tmp_path / "out")])
    message = str(stopped.value)
    assert message.startswith("server-load: --postgres-uri: cannot use PostgreSQL at ")
    assert "secret" not in message and "\n" not in message
    with pytest.raises(SystemExit) as refused:
        main(["bench", "server-load", "--postgres-uri", "mysql://x/y", "--out", str(tmp_path)])
    assert "--postgres-uri must start with postgresql://" in str(refused.value)


def test_a_reply_is_found_after_its_message() -> None:
    from langgraph_topics.bench.server_load import reply_id

    state = {
        "messages": [
            {"id": "u1", "type": "human"},
            {"id": "a1", "type": "ai"},
            {"id": "u2", "type": "human"},
            {"id": "a2", "type": "ai"},
        ]
    }
    assert reply_id(state, "u2") == "a2"
    assert reply_id(state, "u1") == "a1"
    assert reply_id({"messages": [{"id": "u3", "type": "human"}]}, "u3") is None
    assert reply_id({"__error__": "boom"}, "u1") is None
