"""``langgraph dev`` serves the exported graph offline; two turns through ``langgraph-sdk``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langgraph_topics.bench.dev_server import ServerStartError, start_dev_server

ROOT = Path(__file__).resolve().parents[1]
RUN_TIMEOUT = 60.0


def serve(tmp_path_factory: pytest.TempPathFactory, name: str, **env: str) -> Iterator[str]:
    """A ``langgraph dev`` server on a free local port with ``env`` added; its URL."""
    tmp_path = tmp_path_factory.mktemp(name)
    env = {
        "LANGGRAPH_TOPICS_DATA_DIR": str(tmp_path / "data"),
        "LANGGRAPH_TOPICS_BUDGET": "2000",
        **env,
    }
    try:
        # The server's in-memory persistence (.langgraph_api/) goes into its own directory.
        server = start_dev_server(tmp_path / "server", config=ROOT / "langgraph.json", env=env)
    except ServerStartError as error:
        pytest.fail(str(error))
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A ``langgraph dev`` server on a free local port, shared by this module's tests."""
    yield from serve(tmp_path_factory, "studio")


def test_langgraph_json_points_at_the_studio_graph() -> None:
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert config["graphs"] == {
        "topic_memory": "langgraph_topics.graph.studio:graph",
        "topic_review": "langgraph_topics.graph.studio:review_graph",
    }
    from langgraph_topics.graph.studio import graph

    assert graph.checkpointer is None  # the server brings persistence
    assert set(graph.get_input_jsonschema()["properties"]) >= {"messages"}


def test_dev_server_runs_two_turns(dev_server: str) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=dev_server, timeout=RUN_TIMEOUT)
    assistants = {a["graph_id"]: a for a in client.assistants.search()}
    assert sorted(assistants) == ["topic_memory", "topic_review"]
    # Studio draws the input form from this schema: a chat ``messages`` key.
    schemas = client.assistants.get_schemas(assistants["topic_memory"]["assistant_id"])
    assert "messages" in schemas["input_schema"]["properties"]
    thread = client.threads.create()
    nodes: list[str] = []
    for text in [
        "Let's plan a trip to Kyoto next April.",
        "Which neighbourhood should we stay in?",
    ]:
        for chunk in client.runs.stream(
            thread["thread_id"],
            "topic_memory",
            input={"messages": [{"role": "user", "content": text}]},
            stream_mode=["updates", "custom"],
        ):
            assert chunk.event != "error", chunk.data
            if chunk.event == "updates":
                nodes.extend(chunk.data)
    # Every node's output reaches the client (and so Studio).
    assert {"estimate", "assemble", "respond", "bookkeeping"} <= set(nodes)
    state = client.threads.get_state(thread["thread_id"])
    values = state["values"]
    assert [m["type"] for m in values["messages"]] == ["human", "ai", "human", "ai"]
    assert values["turn"] == 2
    assert values["total_messages"] == 4
    assert values["context"]["recent_ids"][-1] == values["messages"][-2]["id"]
    assert values["estimate"]["budget"] == 2000


def test_assistant_settings_change_the_budget_of_its_runs(dev_server: str) -> None:
    """Per-assistant settings (context or configurable) reach the run; the default stays."""
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=dev_server, timeout=RUN_TIMEOUT)
    by_context = client.assistants.create(
        "topic_memory", context={"topic_memory": {"budget_tokens": 1200}}, name="budget 1200"
    )
    by_config = client.assistants.create(
        "topic_memory",
        config={"configurable": {"topic_memory": {"budget_tokens": 900, "language": "en"}}},
        name="budget 900",
    )
    # Studio draws the assistant's settings form from the context schema.
    schemas = client.assistants.get_schemas(by_context["assistant_id"])
    assert "topic_memory" in schemas["context_schema"]["properties"]
    message = {"messages": [{"role": "user", "content": "Let's plan a trip to Kyoto next April."}]}
    for assistant_id, budget in [
        (by_context["assistant_id"], 1200),
        (by_config["assistant_id"], 900),
        ("topic_memory", 2000),  # the default assistant keeps LANGGRAPH_TOPICS_BUDGET
    ]:
        thread = client.threads.create()
        client.runs.wait(thread["thread_id"], assistant_id, input=message)
        values = client.threads.get_state(thread["thread_id"])["values"]
        assert values["context"]["budget"] == budget, assistant_id
        assert values["estimate"]["budget"] == budget
        assert [m["type"] for m in values["messages"]] == ["human", "ai"]
    # A run's own context overrides its assistant's.
    thread = client.threads.create()
    client.runs.wait(
        thread["thread_id"],
        by_context["assistant_id"],
        input=message,
        context={"topic_memory": {"budget_tokens": 1500}},
    )
    assert client.threads.get_state(thread["thread_id"])["values"]["context"]["budget"] == 1500


def test_invalid_assistant_setting_fails_the_run_naming_it(dev_server: str) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=dev_server, timeout=RUN_TIMEOUT)
    bad = client.assistants.create(
        "topic_memory", context={"topic_memory": {"budget_tokens": 100}}, name="too small"
    )
    thread = client.threads.create()
    chunks = list(
        client.runs.stream(
            thread["thread_id"],
            bad["assistant_id"],
            input={"messages": [{"role": "user", "content": "hello"}]},
            stream_mode="updates",
        )
    )
    errors = [chunk.data for chunk in chunks if chunk.event == "error"]
    assert len(errors) == 1, chunks
    text = str(errors[0].get("message"))
    assert "topic_memory.budget_tokens=100" in text and "\n" not in text
    assert not any(chunk.event == "updates" for chunk in chunks)  # no node ran
    assert not client.threads.get_state(thread["thread_id"])["values"]  # nothing written


def test_platform_store_searches_by_meaning_with_the_package_embedder(dev_server: str) -> None:
    """``langgraph.json``'s ``store.index`` embeds offline (``platform_store.embed_texts``)."""
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=dev_server, timeout=RUN_TIMEOUT)
    notes = ["notes", "semantic"]
    client.store.put_item(notes, "kyoto", {"text": "Temples to visit in Kyoto in April"})
    client.store.put_item(notes, "bread", {"text": "Feeding a sourdough starter"})
    found = client.store.search_items(notes, query="京都的寺庙", limit=2)["items"]
    assert [item["key"] for item in found][0] == "kyoto"
    assert found[0]["score"] is not None


def test_a_review_run_on_a_chat_thread_archives_and_the_next_turn_sees_it(dev_server: str) -> None:
    from conversations import SUBJECTS
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=dev_server, timeout=RUN_TIMEOUT)
    thread = client.threads.create()
    history = [
        {"role": role, "content": text}
        for _ in range(2)
        for exchanges in SUBJECTS.values()
        for pair in exchanges
        for role, text in zip(("user", "assistant"), pair, strict=True)
    ]
    imported = {"messages": history, "mode": "import"}
    client.runs.wait(thread["thread_id"], "topic_memory", input=imported)
    before = client.threads.get_state(thread["thread_id"])["values"]
    assert before["topics"], "the import split"
    client.runs.wait(thread["thread_id"], "topic_review", input={"review_now": "2100-01-01"})
    values = client.threads.get_state(thread["thread_id"])["values"]
    assert {t["status"] for t in values["topics"].values()} == {"archived"}
    assert len(values["review"]["archived"]) == len(values["topics"])
    assert values["messages"] == before["messages"] and values["turn"] == before["turn"]
    client.runs.wait(
        thread["thread_id"],
        "topic_memory",
        input={"messages": [{"role": "user", "content": "Do you remember my sourdough starter?"}]},
    )
    after = client.threads.get_state(thread["thread_id"])["values"]
    assert after["turn"] == before["turn"] + 1 and after["review"] == values["review"]
    assert "archived" in {t["status"] for t in after["topics"].values()}


@pytest.fixture(scope="module")
def user_scope_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``langgraph dev`` with the memory scope set to the user (issue 40)."""
    yield from serve(tmp_path_factory, "studio-users", LANGGRAPH_TOPICS_MEMORY_SCOPE="user")


def test_a_users_fact_reaches_their_other_thread_through_the_server(
    user_scope_server: str,
) -> None:
    """Two threads of ann on the server, named by the run's config or context; bob apart."""
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=user_scope_server, timeout=RUN_TIMEOUT)

    def say(thread_id: str, text: str, user: str, *, in_context: bool = False) -> dict[str, Any]:
        named: dict[str, Any] = (
            {"context": {"user_id": user}}
            if in_context
            else {"config": {"configurable": {"user_id": user}}}
        )
        client.runs.wait(
            thread_id,
            "topic_memory",
            input={"messages": [{"role": "user", "content": text}]},
            **named,
        )
        return dict(client.threads.get_state(thread_id)["values"])

    first, second, bobs = (client.threads.create()["thread_id"] for _ in range(3))
    say(first, "My sister Greta lives in Lisbon and keeps bees on her roof.", "ann")
    values = say(second, "Where does my sister Greta live?", "ann", in_context=True)
    prompt = values["context"]["system_prompt"]
    line = next(line for line in prompt.splitlines() if "Lisbon" in line)
    assert f"(thread “{first}”)" in line and line.startswith("[20")
    assert [q["thread_id"] for q in values["context"]["scope_quotes"]] == [first]
    assert values["memory_thread"].endswith(second)
    # bob, on a thread of his own, sees nothing of ann's; on ann's thread he is refused.
    assert (
        "Lisbon"
        not in say(bobs, "Where does my sister Greta live?", "bob")["context"]["system_prompt"]
    )
    run = client.runs.create(
        first,
        "topic_memory",
        input={"messages": [{"role": "user", "content": "Where does Greta live?"}]},
        config={"configurable": {"user_id": "bob"}},
    )
    client.runs.join(first, run["run_id"])
    assert client.runs.get(first, run["run_id"])["status"] == "error"
    kept = client.threads.get_state(first)["values"]["messages"]
    assert [m["type"] for m in kept] == ["human", "ai"]  # nothing of bob's in ann's thread
