"""Whole conversations through the LLM back ends, over the real wire (local scripted server)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_openai import ChatOpenAI
from llm_wire import (
    FakeOpenAI,
    Reply,
    Request,
    message_ids,
    section,
    topic_result,
    user_texts,
)

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.roles.factory import build_roles
from langgraph_topics.roles.llm import LlmSplitter, LlmTopicWindow
from langgraph_topics.roles.native import NativeSplitter
from langgraph_topics.services import thread_directory_name
from langgraph_topics.stores.embeddings import UseEmbedder
from langgraph_topics.tuning.log import read_tuning_log, tuning_log_path

GROUPS = {
    "Kyoto trip": ("kyoto", "ryokan", "gion"),
    "Stock analysis": ("stock", "p/e", "dividend"),
    "Sourdough": ("sourdough", "starter", "flour"),
}
HISTORY = [
    ("user", "Let's plan a trip to Kyoto next April."),
    ("assistant", "Great idea: April is cherry-blossom season in Kyoto, book early."),
    ("user", "Which stock metrics should I learn first? P/E maybe?"),
    ("assistant", "Start with the P/E ratio, then dividend yield and free cash flow."),
    ("user", "My sourdough starter smells of acetone, is it dead?"),
    ("assistant", "Not dead: the starter is hungry. Feed it flour twice a day."),
    ("user", "For Kyoto, should we stay in a ryokan near Gion?"),
    ("assistant", "Yes, a ryokan near Gion is walkable to most temples."),
    ("user", "What P/E is reasonable for a value stock?"),
    ("assistant", "Under about 15 for a value stock, compared within its sector."),
    ("user", "How much flour for my sourdough loaf?"),
    ("assistant", "500 g flour, 350 g water, 100 g starter, 10 g salt."),
]


def group_of(text: str) -> str | None:
    lowered = text.lower()
    return next((name for name, words in GROUPS.items() if any(w in lowered for w in words)), None)


def last_user_message(block: str) -> str:
    found = user_texts(block)
    return found[-1] if found else ""


def fake_splitter(request: Request) -> Reply:
    existing = dict(
        (name, topic_id)
        for topic_id, name in re.findall(
            r'<topic id="([^"]+)"[^>]*><name>(.*?)</name>', section(request.user, "topics")
        )
    )
    lines = []
    for exchange in re.findall(r"<exchange[^>]*>(.*?)</exchange>", request.user, re.DOTALL):
        ids = re.findall(r'<message id="([^"]+)"', exchange)
        name = group_of(exchange) or "Misc"
        if name in existing:
            lines.append(
                f'<assignment msg_id="{" ".join(ids)}" topic="existing_active" '
                f'topic_id="{existing[name]}">same subject</assignment>'
            )
        else:
            lines.append(
                f'<assignment msg_id="{" ".join(ids)}" topic="new" topic_name="{name}">'
                f"<summary>Everything about {name}</summary>new subject</assignment>"
            )
    return Reply("<topic_split>\n" + "\n".join(lines) + "\n</topic_split>")


def fake_brief_writer(request: Request) -> Reply:
    name = re.search(r"<name>(.*?)</name>", request.user).group(1)  # type: ignore[union-attr]
    return Reply(
        f"<topic_brief><name>{name}</name><brief>Everything about {name}</brief></topic_brief>"
    )


def fake_topic_window(request: Request) -> Reply:
    name = re.search(r"- Name: (.*)", request.user).group(1).strip()  # type: ignore[union-attr]
    question = last_user_message(section(request.user, "unsplit_messages"))
    split_ids = message_ids(section(request.user, "split_messages"))
    if group_of(question) == name or (
        name in GROUPS and any(w in question.lower() for w in GROUPS[name])
    ):
        return Reply(topic_result(0.9, split_ids[:2], f"About {name}"), cached_tokens=80)
    return Reply(topic_result(0.1), cached_tokens=80)


def fake_router(request: Request) -> Reply:
    query = section(request.user, "conversation").lower()
    matched = [
        f'<topic id="{topic_id}" relevance="high">named in the question</topic>'
        for topic_id, name in re.findall(
            r'<topic id="([^"]+)"[^>]*><name>(.*?)</name>', request.user
        )
        if name in GROUPS and any(w in query for w in GROUPS[name])
    ]
    return Reply(
        "<topic_routing><matched_topics>" + "".join(matched) + "</matched_topics></topic_routing>"
    )


def fake_responder(request: Request) -> Reply:
    question = request.last_user
    if "activate_topic" in request.tools:
        for name, words in GROUPS.items():
            hit = next((w for w in words if w in question.lower()), None)
            if hit and f"## {name} (" not in request.system:
                return Reply(tool_calls=[("activate_topic", {"query": hit})])
    shown = [name for name in GROUPS if f"## {name} (" in request.system]
    return Reply("Answer drawing on: " + (", ".join(shown) or "nothing"))


@pytest.fixture
def wire() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    server.on("splitter", fake_splitter)
    server.on("brief_writer", fake_brief_writer)
    server.on("topic_window", fake_topic_window)
    server.on("index_router", fake_router)
    server.on("responder", fake_responder)
    yield server
    server.close()


def settings_for(tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "data_dir": tmp_path / "memory",
        "budget_tokens": 380,
        "keep_recent": 4,
        "min_active": 1,
        "default_active": 2,
        "max_active": 3,
        # One round: these four turns then show a dormancy and an activate_topic call (the
        # default, conservative 3 rounds is covered by test_dormancy).
        "dormancy_rounds": 1,
        # Every topic read every turn: what this conversation checks call by call (the
        # governor's skips and reuses are tests/test_window_governor.py's).
        "topic_window_governor": False,
        # The seed's own activation paths through a model (weak results, activate_topic); the
        # evidence's wake-up before the reads is tests/test_activation.py's.
        "wake_by_evidence": False,
        "language": "en",
        "retry_backoff_seconds": 0.001,
        "strong_model": None,
        "cheap_model": None,
        "role_models": {},
        **overrides,
    }
    return Settings(**values)


def model(wire: FakeOpenAI) -> ChatOpenAI:
    return ChatOpenAI(model="fake", base_url=wire.url, api_key="dummy", max_retries=0, timeout=5)  # type: ignore[call-arg]


@pytest.fixture
def memory(wire: FakeOpenAI, tmp_path: Path, embedder: UseEmbedder) -> Iterator[TopicMemory]:
    settings = settings_for(tmp_path)
    roles = build_roles(settings, strong=model(wire), cheap=model(wire), embedder=embedder)
    with TopicMemory(settings=settings, roles=roles, embedder=embedder) as made:
        yield made


def log_of(memory: TopicMemory, thread: str) -> list[dict[str, Any]]:
    path = tuning_log_path(memory.settings.data_dir, thread_directory_name(thread))
    return read_tuning_log(path)


def common_prefix(a: str, b: str) -> int:
    return len(os.path.commonprefix([a, b]))


def put_to_sleep(memory: TopicMemory, thread: str, name: str) -> None:
    """Make the topic called ``name`` dormant, as a lasting low score would."""
    topics = dict(memory.state(thread)["topics"])
    topic_id = next(i for i, record in topics.items() if record["name"] == name)
    topics[topic_id] = {**topics[topic_id], "status": "dormant"}
    memory.services.stores(thread).topic_index.set_status(topic_id, "dormant")
    memory.graph.update_state(memory.run_config(thread), {"topics": topics}, as_node="bookkeeping")


def test_a_whole_conversation_through_the_llm_back_ends(
    memory: TopicMemory, wire: FakeOpenAI
) -> None:
    thread = "alice"
    memory.import_messages(
        thread, [{"id": f"h{i}", "role": r, "content": c} for i, (r, c) in enumerate(HISTORY)]
    )
    assert memory.check(thread).ok
    assert wire.of_role("splitter"), "the history should have been split"
    names = sorted(t["name"] for t in memory.topics(thread))
    assert names == ["Kyoto trip", "Sourdough", "Stock analysis"]

    answers = []
    for number, question in enumerate(
        [
            "Which ryokan in Kyoto did we pick?",
            "And how far is the Gion ryokan from the station in Kyoto?",
            "For Kyoto, can I pay with my stock dividends?",
            "Thanks, one more Kyoto question: when do cherry blossoms peak?",
        ]
    ):
        if number == 2:
            # The second turn's split woke the stock topic, which may not fall asleep in the
            # turn that woke it: put it to sleep, so that the third question needs the index.
            put_to_sleep(memory, thread, "Stock analysis")
        answers.append(memory.chat(thread, question))
        # A model splitter's split lands after the reply, in the background: wait for it, as
        # a user reading the answer would, so the next turn sees it.
        assert memory.wait_idle(thread, timeout=60)
        assert memory.check(thread).ok, memory.check(thread).findings

    assert answers[0] == "Answer drawing on: Kyoto trip"
    # The third answer needed the stock topic: the responder called activate_topic, the router
    # picked the dormant topic, its window was read, and the answer was regenerated.
    assert "Stock analysis" in answers[2]
    calls = [r for r in wire.of_role("responder") if r.tools]
    assert any("## Stock analysis (" not in r.system for r in calls)

    log = log_of(memory, thread)
    chats = [line for line in log if line["mode"] == "chat"]
    assert len(chats) == 4
    imports = [line for line in log if line["mode"] == "import"]
    assert imports and all(line["roles"]["splitter"]["calls"] == 1 for line in imports)
    third = chats[2]
    reasons = [e["reason"] for e in third["events"] if e["kind"] == "activated"]
    assert "tool_call" in reasons
    assert third["roles"]["responder"]["calls"] == 2
    assert third["roles"]["index_router"]["calls"] == 1
    stock = next(t for t in third["topics"].values() if t["name"] == "Stock analysis")
    assert stock["score"] == 0.9 and stock["referenced"] == 2
    first = chats[0]
    assert any(e["kind"] == "dormant" and e["reason"] for e in first["events"])
    kyoto = next(t for t in first["topics"].values() if t["name"] == "Kyoto trip")
    assert kyoto["score"] == 0.9 and kyoto["average"] > 0
    window_stats = first["roles"]["topic_window"]
    assert window_stats["calls"] == 3 and window_stats["cached_tokens"] == 240
    assert window_stats["input_tokens"] == 3 * 180 and window_stats["fallbacks"] == 0
    assert 0 < first["main_window"]["topic_share"] < 1


def test_topic_window_prompts_of_consecutive_turns_share_the_topic_prefix(
    memory: TopicMemory, wire: FakeOpenAI
) -> None:
    thread = "bob"
    memory.import_messages(
        thread, [{"id": f"h{i}", "role": r, "content": c} for i, (r, c) in enumerate(HISTORY)]
    )
    before = len(wire.of_role("topic_window"))
    memory.chat(thread, "Which ryokan in Kyoto did we pick?")
    memory.chat(thread, "Is the Kyoto ryokan close to Gion?")
    kyoto = [r for r in wire.of_role("topic_window")[before:] if "- Name: Kyoto trip" in r.user]
    assert len(kyoto) == 2
    first, second = kyoto[0].prompt_text, kyoto[1].prompt_text
    shared = common_prefix(first, second)
    # The prefix holds the system prompt and every split message of the topic (and here even
    # the unsplit messages both turns share).
    assert shared > first.index("</split_messages>")
    chats = [line for line in log_of(memory, thread) if line["mode"] == "chat"]
    recorded = next(t for t in chats[1]["topics"].values() if t["name"] == "Kyoto trip")
    assert recorded["prompt_prefix_share"] == pytest.approx(shared / len(second), abs=0.02)
    assert recorded["prompt_prefix_share"] > 0.5


def test_a_failing_topic_window_is_left_out_and_the_turn_completes(
    memory: TopicMemory, wire: FakeOpenAI
) -> None:
    thread = "carol"
    memory.import_messages(
        thread, [{"id": f"h{i}", "role": r, "content": c} for i, (r, c) in enumerate(HISTORY)]
    )

    def flaky(request: Request) -> Reply:
        if "- Name: Sourdough" in request.user:
            return Reply(status=500)
        return fake_topic_window(request)

    wire.on("topic_window", flaky)
    answer = memory.chat(thread, "Which ryokan in Kyoto did we pick?")
    assert answer == "Answer drawing on: Kyoto trip"
    assert memory.check(thread).ok
    line = [entry for entry in log_of(memory, thread) if entry["mode"] == "chat"][-1]
    assert line["roles"]["topic_window"]["failures"] == 1
    assert line["roles"]["topic_window"]["retries"] == 2
    assert any(e["kind"] == "degraded" for e in line["events"])
    sourdough = next(t for t in memory.topics(thread) if t["name"] == "Sourdough")
    assert sourdough["scores"] == []  # no score invented for the failed window


def test_malformed_replies_fall_back_natively_and_are_counted(
    memory: TopicMemory, wire: FakeOpenAI
) -> None:
    thread = "dave"
    wire.on("splitter", lambda request: Reply("I would group these by subject."))
    memory.import_messages(
        thread, [{"id": f"h{i}", "role": r, "content": c} for i, (r, c) in enumerate(HISTORY)]
    )
    assert memory.check(thread).ok
    assert memory.topics(thread)  # the native splitter placed every message
    line = [entry for entry in log_of(memory, thread) if entry["mode"] == "import"][0]
    assert line["roles"]["splitter"] | {"latency_s": 0} == line["roles"]["splitter"] | {
        "calls": 1,
        "format_retries": 1,
        "fallbacks": 1,
        "latency_s": 0,
    }


def test_a_context_query_writes_no_tuning_line(memory: TopicMemory, wire: FakeOpenAI) -> None:
    thread = "erin"
    memory.import_messages(
        thread, [{"id": f"h{i}", "role": r, "content": c} for i, (r, c) in enumerate(HISTORY)]
    )
    memory.chat(thread, "Which ryokan in Kyoto did we pick?")
    lines = len(log_of(memory, thread))
    calls = len(wire.of_role("topic_window"))
    report = memory.context(thread, "What about the sourdough starter?")
    assert len(wire.of_role("topic_window")) > calls  # the topic windows did run
    assert report["context"]["tokens"] <= memory.settings.budget_tokens
    assert len(log_of(memory, thread)) == lines
    memory.chat(thread, "Back to Kyoto: is Gion walkable?")
    line = log_of(memory, thread)[-1]
    # The dry run's calls were not carried into the next turn's line.
    assert line["roles"]["topic_window"]["calls"] == len(line["topics"]) - sum(
        1 for t in line["topics"].values() if t["score"] is None
    )


def test_models_come_from_the_environment(
    wire: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: UseEmbedder
) -> None:
    monkeypatch.setenv("LANGGRAPH_TOPICS_CHEAP_MODEL", "openai:gpt-4o-mini")
    monkeypatch.setenv("LANGGRAPH_TOPICS_SPLITTER_MODEL", "openai:gpt-4o")
    monkeypatch.delenv("LANGGRAPH_TOPICS_STRONG_MODEL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    monkeypatch.setenv("OPENAI_BASE_URL", wire.url)
    settings = Settings(data_dir=tmp_path, language="en", retry_backoff_seconds=0.001)
    assert settings.cheap_model == "openai:gpt-4o-mini"
    assert settings.role_models == {"splitter": "openai:gpt-4o"}
    roles = build_roles(settings, embedder=embedder)
    assert isinstance(roles.topic_window, LlmTopicWindow)
    assert isinstance(roles.splitter, LlmSplitter)
    assert not isinstance(roles.responder, LlmSplitter)  # strong tier unset: native
    verdict = roles.topic_window.evaluate(
        {"id": "t", "name": "Kyoto trip", "brief": "b", "status": "active", "file": "f"},
        [{"id": "m1", "role": "user", "content": "Kyoto in April"}],
        [{"id": "m2", "role": "user", "content": "Kyoto hotel?"}],
    )
    assert verdict["relevance_score"] == 0.9
    assert wire.requests[-1].body["model"] == "gpt-4o-mini"


def test_no_model_configured_means_native_roles(tmp_path: Path, embedder: UseEmbedder) -> None:
    roles = build_roles(settings_for(tmp_path), embedder=embedder)
    assert isinstance(roles.splitter, NativeSplitter)
