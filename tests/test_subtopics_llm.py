"""A provider refusing a topic's prompt as too long: the topic is read natively, then divided.

Only the topic window is a model here (the local OpenAI-compatible server, through the real
``langchain-openai`` client); it answers 400, as OpenAI and vLLM word it, for prompts quoting
more than ``MAX_QUOTED`` messages of the topic.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_openai import ChatOpenAI
from llm_wire import FakeOpenAI, Reply, Request, message_ids, section, topic_result
from test_subtopics import kyoto_history, settings_for

from langgraph_topics import TopicMemory
from langgraph_topics.roles.factory import build_roles
from langgraph_topics.roles.llm.retries import is_prompt_too_long
from langgraph_topics.stores.embeddings import UseEmbedder

MAX_QUOTED = 14
TOO_LONG = (
    "This model's maximum context length is 1024 tokens. However, your messages resulted in "
    "2210 tokens. Please reduce the length of the messages."
)


def quoted(request: Request) -> list[str]:
    return message_ids(section(request.user, "split_messages"))


def small_context_window(request: Request) -> Reply:
    ids = quoted(request)
    if len(ids) > MAX_QUOTED:
        return Reply(status=400, text=TOO_LONG)
    return Reply(topic_result(0.8, ids[:2], "What was said about it"))


@pytest.fixture
def wire() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    server.on("topic_window", small_context_window)
    yield server
    server.close()


@pytest.fixture
def memory(wire: FakeOpenAI, tmp_path: Path, embedder: UseEmbedder) -> Iterator[TopicMemory]:
    # No size limit (the default): only the provider's refusal divides the topic.
    settings = settings_for(tmp_path, subtopic_limit_tokens=None, retry_backoff_seconds=0.001)
    model = ChatOpenAI(model="fake", base_url=wire.url, api_key="dummy", max_retries=0, timeout=5)  # type: ignore[call-arg]
    roles = build_roles(settings, per_role={"topic_window": model}, embedder=embedder)
    with TopicMemory(settings=settings, roles=roles, embedder=embedder) as made:
        yield made


def test_too_long_is_told_apart_from_other_refusals() -> None:
    class Refused(Exception):
        def __init__(self, status_code: int, message: str) -> None:
            super().__init__(message)
            self.status_code = status_code

    assert is_prompt_too_long(Refused(400, TOO_LONG))
    assert is_prompt_too_long(Refused(400, "prompt is too long: 210000 tokens > 200000 maximum"))
    assert not is_prompt_too_long(Refused(400, "invalid api key"))
    assert not is_prompt_too_long(Refused(500, TOO_LONG))


def test_an_oversized_topic_is_read_natively_then_divided_and_read_again(
    memory: TopicMemory, wire: FakeOpenAI
) -> None:
    thread = "trip"
    memory.import_messages(thread, kyoto_history(rounds=3))
    store = memory.services.stores(thread).topic_store
    big = max(store.topic_ids(), key=lambda t: store.meta(t)["message_count"])
    assert store.meta(big)["message_count"] > MAX_QUOTED

    memory.chat(thread, "Which ryokan near Gion had the private onsen bath?")
    state = memory.state(thread)
    # Refused, but not left out: the native back end read it this turn.
    assert big in state["topic_results"]
    assert any(r.role == "topic_window" and len(quoted(r)) > MAX_QUOTED for r in wire.requests)
    assert [e for e in state["events"] if e["kind"] == "oversized"][0]["topic_ids"] == [big]
    assert big in state["oversized_topics"]

    before = len(wire.requests)
    memory.chat(thread, "And what about the Fushimi Inari shrine at dawn?")
    state = memory.state(thread)
    record = state["topics"][big]
    assert record["status"] == "split" and len(record["children"]) >= 2
    assert not state.get("oversized_topics")
    later = [r for r in wire.requests[before:] if r.role == "topic_window"]
    assert later, "the subtopics are read by the model"
    assert all(len(quoted(r)) <= MAX_QUOTED for r in later)
    assert set(state["topic_results"]) & set(record["children"])
    assert not [e for e in state["events"] if e["kind"] == "degraded"]
    assert memory.check(thread).ok


HOTEL_WORDS = ("ryokan", "onsen", "kaiseki", "machiya")


def continuing_splitter(request: Request) -> Reply:
    """Keeps every exchange in the first existing topic; with none (a division), by subject."""
    existing = re.findall(r'<topic id="([^"]+)"', section(request.user, "topics"))
    lines = []
    for exchange in re.findall(r"<exchange[^>]*>(.*?)</exchange>", request.user, re.DOTALL):
        ids = " ".join(re.findall(r'<message id="([^"]+)"', exchange))
        if existing:
            lines.append(
                f'<assignment msg_id="{ids}" topic="existing_active" topic_id="{existing[0]}">'
                "same trip</assignment>"
            )
            continue
        name = "Kyoto ryokan" if any(w in exchange.lower() for w in HOTEL_WORDS) else "Temples"
        lines.append(
            f'<assignment msg_id="{ids}" topic="new" topic_name="{name}">'
            f"<summary>Where we talked about {name}</summary>a part of the trip</assignment>"
        )
    return Reply("<topic_split>\n" + "\n".join(lines) + "\n</topic_split>")


def test_a_model_splitter_proposes_the_subtopics(
    wire: FakeOpenAI, tmp_path: Path, embedder: UseEmbedder
) -> None:
    thread = "trip"
    wire.on("splitter", continuing_splitter)
    model = ChatOpenAI(model="fake", base_url=wire.url, api_key="dummy", max_retries=0, timeout=5)  # type: ignore[call-arg]
    settings = settings_for(tmp_path, subtopic_limit_tokens=400, retry_backoff_seconds=0.001)
    roles = build_roles(settings, per_role={"splitter": model}, embedder=embedder)
    history = kyoto_history(rounds=3)
    with TopicMemory(settings=settings, roles=roles, embedder=embedder) as memory:
        memory.import_messages(thread, history)
        registry = memory.state(thread)["topics"]
        parents = [r for r in registry.values() if r["status"] == "split"]
        assert len(parents) == 1, "everything went to one topic, which outgrew 400 tokens"
        children = [registry[c] for c in parents[0]["children"]]
        names = sorted(c["name"] for c in children)
        # The model's "Kyoto ryokan" is its parent's name too (the first exchange named the
        # topic): a subtopic is named for what tells it apart instead (issue 36 item 3).
        assert parents[0]["name"] == "Kyoto ryokan" and "Temples" in names
        assert len(set(names)) == 2 and parents[0]["name"] not in names
        store = memory.services.stores(thread).topic_store
        by_name = {c["name"]: store.messages(c["id"]) for c in children}
        [hotels] = [name for name in names if name != "Temples"]
        # The model grouped by subject, not by position: every hotel line went to the ryokan.
        assert all(any(w in m["content"].lower() for w in HOTEL_WORDS) for m in by_name[hotels])
        assert memory.check(thread).ok
