"""Tool-result namespace (seed 001 T2): large results leave the windows by reference and preview.

The acceptance conversation is agent-shaped: a user message, an assistant message calling a
tool, the tool's 200 KB result. The windows hold its reference and preview, the responder reads
it back with ``read_namespace`` for one answer, the topic files and the transcript keep the
full text, and the call and its result are never apart.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from fakes import with_roles
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from llm_wire import FakeOpenAI, Reply

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.middleware import TopicMemoryMiddleware
from langgraph_topics.middleware.fakes import ToolCallingFakeModel
from langgraph_topics.namespace import (
    NamespacePolicy,
    digest_of,
    find_references,
    key_information,
    reference_for,
)
from langgraph_topics.roles.llm import LlmResponder
from langgraph_topics.roles.llm.calling import CallPolicy
from langgraph_topics.roles.llm.retries import Backoff
from langgraph_topics.roles.native import native_roles
from langgraph_topics.roles.native.responder import NativeResponder
from langgraph_topics.services import thread_directory
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.namespace_store import (
    FileNamespaceStore,
    InMemoryNamespaceStore,
    NamespaceEntryError,
)

SECRET = "the passphrase of the staging vault is PELICAN-42"
TAIL = "the rollback tag is OSPREY-7"


def worker_log() -> str:
    """A 200 KB tool result: a secret early on, another one near the end."""
    lines = [
        f"2026-07-20 12:{i // 60 % 60:02d}:{i % 60:02d} INFO worker {i} processed batch "
        f"{i * 7} in {i % 13 + 1} ms"
        for i in range(3000)
    ]
    lines[40] = f"worker 40 noted {SECRET}"
    lines[2900] = f"worker 2900 noted {TAIL}"
    text = "\n".join(lines)
    while len(text.encode()) < 200_000:
        text += "\n" + lines[len(text) % 3000]
    return text


STAMP = {"timestamp": "2026-07-20T12:00:00+00:00"}
BIG = worker_log()
REF = reference_for(BIG)


def exchange(content: str, suffix: str = "") -> list[BaseMessage]:
    """A user message, the assistant's tool call and the tool's result."""
    return [
        HumanMessage("Read the worker log, please.", id=f"u-log{suffix}"),
        AIMessage(
            "",
            id=f"a-log{suffix}",
            tool_calls=[
                {
                    "name": "read_file",
                    "args": {"path": "worker.log"},
                    "id": f"call-log{suffix}",
                    "type": "tool_call",
                }
            ],
        ),
        ToolMessage(
            content, id=f"t-log{suffix}", tool_call_id=f"call-log{suffix}", name="read_file"
        ),
    ]


@pytest.fixture
def wire() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    yield server
    server.close()


def llm_memory(path: Path, wire: FakeOpenAI, budget: int = 6000, **overrides: Any) -> TopicMemory:
    """Native roles, except the responder: a chat model served by the local test server."""
    settings = Settings(data_dir=path, budget_tokens=budget, language="en", **overrides)
    embedder = HashEmbedder()
    model = ChatOpenAI(  # type: ignore[call-arg]
        model="fake",
        base_url=wire.url,
        api_key="dummy",  # type: ignore[arg-type]
        max_retries=0,
        timeout=10,
    )
    policy = CallPolicy(backoff=Backoff(retries=0, base_seconds=0.001), language="en")
    responder = LlmResponder(model, NativeResponder(), policy)
    roles = with_roles(native_roles(embedder, settings), responder=responder)
    return TopicMemory(settings=settings, roles=roles, embedder=embedder)


def assert_paired(messages: Sequence[StoredMessage]) -> None:
    """Invariant 8: every tool call with its results, every result with its call."""
    calls = {str(c.get("id")) for m in messages for c in m.get("tool_calls", [])}
    answered = {m.get("tool_call_id", "") for m in messages if m["role"] == "tool"}
    assert calls == answered, calls ^ answered


def assert_window_paired(memory: TopicMemory, thread: str) -> None:
    context = memory.state(thread)["context"]
    assert_paired([*context["referenced_messages"], *context["messages"]])
    assert context["tokens"] <= context["budget"]


def assert_topics_paired(memory: TopicMemory, thread: str) -> None:
    store = memory.services.stores(thread).topic_store
    for topic_id in store.topic_ids():
        assert_paired(store.messages(topic_id))


def filler(count: int) -> list[BaseMessage]:
    """Long unrelated exchanges, enough to push the exchange above into a topic."""
    words = "garden tomato compost seedlings mulch watering aphids soil basil trellis".split()
    messages: list[BaseMessage] = []
    for i in range(count):
        text = " ".join(words[(i + k) % len(words)] for k in range(60))
        messages.append(HumanMessage(f"Garden note {i}: {text}", id=f"fill-u{i}"))
        messages.append(AIMessage(f"Noted garden item {i}: {text}", id=f"fill-a{i}"))
    return messages


# --- acceptance -----------------------------------------------------------------------------


def test_a_200_kb_tool_result_is_a_reference_read_back_for_one_round(
    tmp_path: Path, wire: FakeOpenAI
) -> None:
    memory = llm_memory(tmp_path / "memory", wire)
    wire.script(
        "responder",
        Reply(tool_calls=[("read_namespace", {"reference": REF})]),
        Reply("The passphrase is PELICAN-42."),
        Reply("You're welcome."),
    )
    question = HumanMessage("What is the staging vault passphrase?", id="u-ask")
    result = memory.run_turn("agent", {"messages": [*exchange(BIG), question]})
    assert result["messages"][-1].content == "The passphrase is PELICAN-42."

    first, second = wire.of_role("responder")
    # The window holds the reference and a preview, not the 200 KB.
    assert REF in first.prompt_text and "lines, " in first.prompt_text
    assert "PELICAN" not in first.prompt_text and len(first.prompt_text) < 10_000
    assert first.tools == ["read_namespace"]
    # The next round sees the full text, within the budget (its start: the budget is 6,000).
    assert SECRET in second.system and TAIL not in second.system
    assert "shortened to fit the window" in second.system
    assert second.tools == []  # nothing left to read
    context = result["context"]
    assert context["namespace_read"] == [REF] and context["tokens"] <= 6000
    assert_window_paired(memory, "agent")

    # The turn after goes back to the reference.
    memory.run_turn("agent", {"messages": [HumanMessage("Thanks!", id="u-thanks")]})
    third = wire.of_role("responder")[2]
    assert REF in third.prompt_text and SECRET not in third.prompt_text
    assert third.tools == ["read_namespace"]
    assert "namespace_read" not in memory.state("agent")["context"]

    # Older messages move to topics: the topic file holds the full text, call and result
    # together; the namespace entry sits beside the topic files.
    memory.import_messages("agent", filler(24))
    store = memory.services.stores("agent").topic_store
    holder = store.locate("t-log")
    assert holder is not None and store.locate("a-log") == holder
    # The line sits in its topic's file, or in the file of the topic that topic was divided
    # from (a division moves no message: docs/subtopics.md).
    files = []
    topic: str | None = holder
    while topic is not None:
        files.append(thread_directory(tmp_path / "memory", "agent") / store.meta(topic)["file"])
        topic = store.meta(topic)["parent_id"]
    lines = [json.loads(line) for f in files for line in f.read_text("utf-8").splitlines()]
    stored = next(line for line in lines if line.get("id") == "t-log")
    assert stored["content"] == BIG
    assert any(m["id"] == "t-log" and m["content"] == BIG for m in memory.transcript("agent"))
    entry = thread_directory(tmp_path / "memory", "agent") / "namespace" / f"{digest_of(REF)}.json"
    assert json.loads(entry.read_text("utf-8"))["content"] == BIG
    assert_topics_paired(memory, "agent")

    # A question about it later: whatever the topics quote, calls and results stay paired
    # and no window carries the full text.
    wire.script("responder", Reply("It was PELICAN-42."))
    memory.run_turn(
        "agent",
        {"messages": [HumanMessage("Which passphrase did the worker log give?", id="u-later")]},
    )
    assert_window_paired(memory, "agent")
    assert "OSPREY" not in wire.of_role("responder")[-1].prompt_text
    assert memory.check("agent").ok


def test_with_room_the_whole_200_kb_is_read_back(tmp_path: Path, wire: FakeOpenAI) -> None:
    memory = llm_memory(tmp_path / "memory", wire, budget=150_000)
    wire.script(
        "responder",
        Reply(tool_calls=[("read_namespace", {"reference": f"please read <{REF}>"})]),
        Reply("OSPREY-7."),
    )
    memory.run_turn("big", {"messages": [*exchange(BIG), HumanMessage("Rollback tag?", id="u")]})
    first, second = wire.of_role("responder")
    assert BIG not in first.system and BIG in second.system
    assert memory.state("big")["context"]["tokens"] <= 150_000


def test_an_unknown_reference_is_answered_in_the_window(tmp_path: Path, wire: FakeOpenAI) -> None:
    memory = llm_memory(tmp_path / "memory", wire)
    unknown = "namespace://tool/0123456789abcdef"
    wire.script(
        "responder",
        Reply(tool_calls=[("read_namespace", {"reference": unknown})]),
        Reply("From the preview: the log has 3000 lines."),
    )
    result = memory.run_turn("t", {"messages": [*exchange(BIG), HumanMessage("How long?", id="u")]})
    assert result["messages"][-1].content == "From the preview: the log has 3000 lines."
    second = wire.of_role("responder")[1]
    assert f"found no stored tool result for <{unknown}>" in second.system
    assert second.tools == ["read_namespace"]  # the real reference can still be read
    assert memory.check("t").ok


def test_a_damaged_entry_is_one_line_and_the_message_is_kept(
    tmp_path: Path, wire: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    wire.script("responder", Reply("Read."))
    with llm_memory(tmp_path / "memory", wire) as memory:
        memory.run_turn("t", {"messages": [*exchange(BIG), HumanMessage("Got it?", id="u")]})
    entry = thread_directory(tmp_path / "memory", "t") / "namespace" / f"{digest_of(REF)}.json"
    entry.write_text('{"content": "truncat', "utf-8")

    # The store refuses it with one line naming the file.
    with pytest.raises(NamespaceEntryError) as refused:
        FileNamespaceStore(entry.parent).read(REF)
    assert str(refused.value).startswith(str(entry)) and "\n" not in str(refused.value)

    # A memory reopened on it says so in one line, writes the entry again from the message
    # (the working set and the topic files keep the full text) and reads it back.
    wire.script(
        "responder",
        Reply(tool_calls=[("read_namespace", {"reference": REF})]),
        Reply("PELICAN-42."),
    )
    with caplog.at_level(logging.WARNING), llm_memory(tmp_path / "memory", wire) as memory:
        memory.run_turn("t", {"messages": [HumanMessage("The passphrase?", id="u2")]})
        warnings = [r.getMessage() for r in caplog.records if "namespace entry" in r.getMessage()]
        assert warnings and all(str(entry) in w and "\n" not in w for w in warnings)
        assert SECRET in wire.of_role("responder")[-1].system
        assert json.loads(entry.read_text("utf-8"))["content"] == BIG
        assert all(m["content"] != BIG for m in memory.state("t")["context"]["messages"])
        assert memory.state("t")["messages"][2].content == BIG  # the working set keeps it
        assert memory.check("t").ok


def test_small_results_leave_the_window_byte_identical(tmp_path: Path) -> None:
    small = "\n".join(f"row {i}: value {i * 3}" for i in range(40))  # 40 lines, < 2 KB
    contexts = []
    for enabled in (True, False):
        embedder = HashEmbedder()
        settings = Settings(
            data_dir=tmp_path / f"m{enabled}", budget_tokens=2000, tool_namespace=enabled
        )
        with TopicMemory(
            settings=settings, roles=native_roles(embedder, settings), embedder=embedder
        ) as memory:
            sent = [*exchange(small), HumanMessage("Which row has 27?", id="u")]
            messages = [m.model_copy(update={"additional_kwargs": STAMP}) for m in sent]
            result = memory.run_turn("t", {"messages": messages, "mode": "assemble"})
            contexts.append(result["context"])
            namespace_dir = thread_directory(settings.data_dir, "t") / "namespace"
            assert not namespace_dir.exists()
    assert contexts[0] == contexts[1]
    assert "namespace" not in contexts[0]["system_prompt"]


def test_agent_model_reads_a_reference_through_the_middleware(tmp_path: Path) -> None:
    embedder = HashEmbedder()
    settings = Settings(data_dir=tmp_path / "memory", budget_tokens=6000, language="en")
    memory = TopicMemory(
        settings=settings, roles=native_roles(embedder, settings), embedder=embedder
    )

    @tool
    def read_log(query: str) -> str:
        """Read the worker log."""
        return BIG

    model = ToolCallingFakeModel(triggers={"worker log": "read_log", "read it": "read_namespace"})
    agent = create_agent(
        model, [read_log], middleware=[TopicMemoryMiddleware(memory)], checkpointer=InMemorySaver()
    )
    config: Any = {"configurable": {"thread_id": "w"}}
    agent.invoke({"messages": [HumanMessage("Open the worker log")]}, config)
    shown = model.calls[1][-1]
    assert isinstance(shown, ToolMessage) and shown.text.startswith(f"<{REF}>")
    assert len(shown.text) < 2000 and "read_namespace" in model.bound_tools[1]
    assert "read_namespace" not in model.bound_tools[0]  # nothing to read yet

    agent.invoke({"messages": [HumanMessage(f"Please read it: {REF}")]}, config)
    acknowledgement = model.calls[3][-1]
    assert isinstance(acknowledgement, ToolMessage) and "in your context" in acknowledgement.text
    assert SECRET in model.calls[3][0].text  # the window of the call after the read

    agent.invoke({"messages": [HumanMessage("read it: namespace://tool/ffffffffffffffff")]}, config)
    assert "No stored tool result" in model.calls[5][-1].text
    assert SECRET not in model.calls[5][0].text  # back to the reference
    for call in model.calls:
        calls = {c["id"] for m in call if isinstance(m, AIMessage) for c in m.tool_calls}
        answered = {m.tool_call_id for m in call if isinstance(m, ToolMessage)}
        assert calls == answered
    assert any(m["content"] == BIG for m in memory.transcript("w"))
    assert memory.check("w").ok
    memory.close()


def test_native_responder_reads_the_reference_a_question_names(tmp_path: Path) -> None:
    embedder = HashEmbedder()
    settings = Settings(data_dir=tmp_path / "memory", budget_tokens=6000)
    with TopicMemory(
        settings=settings, roles=native_roles(embedder, settings), embedder=embedder
    ) as memory:
        ask = HumanMessage(f"What does {REF} say about the staging vault?", id="u")
        result = memory.run_turn("n", {"messages": [*exchange(BIG), ask]})
        assert result["namespace_reads"] == [REF]
        assert SECRET in result["context"]["system_prompt"]
        assert isinstance(result["messages"][-1], AIMessage)


# --- parts ----------------------------------------------------------------------------------


def tool_message(content: str, name: str = "search") -> StoredMessage:
    return {"id": "t", "role": "tool", "content": content, "tool_call_id": "c", "name": name}


def test_thresholds_are_the_seeds() -> None:
    policy = NamespacePolicy()
    assert not policy.is_large(tool_message("x" * 2048))
    assert policy.is_large(tool_message("x" * 2049))
    assert not policy.is_large(tool_message("\n".join("l" for _ in range(50))))
    assert policy.is_large(tool_message("\n".join("l" for _ in range(51))))
    assert policy.is_large(tool_message("配置" * 350))  # 700 characters, 2,100 bytes
    assert not policy.is_large({"id": "u", "role": "user", "content": "x" * 9000})
    always = NamespacePolicy(large_tools=frozenset({"read_file"}))
    assert always.is_large(tool_message("short", name="read_file"))
    assert not always.is_large(tool_message("short"))


def test_previews_show_key_information_within_their_bound() -> None:
    data = json.dumps({"status": "ok", "items": list(range(500)), "config": {"timeout": 15}})
    preview = key_information(data, "en", 300)
    assert "JSON object, 3 keys" in preview and "items: [500 items]" in preview
    assert "config: {timeout}" in preview and len(preview) <= 300
    log = "\n".join(
        ["# Build report", *(f"step {i} done" for i in range(200)), "ERROR: disk full", "x"]
    )
    preview = key_information(log, "en")
    assert "L1 # Build report" in preview and "L202 ERROR: disk full" in preview
    chinese = "\n".join(["部署日志", *(f"第{i}步完成" for i in range(300)), "错误：磁盘已满"])
    preview = key_information(chinese, "zh", 200)
    assert preview.startswith("开头: 部署日志") and "错误：磁盘已满" in preview
    assert len(preview) <= 200
    assert len(key_information(BIG, "en")) <= 600


def test_store_is_content_addressed_and_bounded_in_memory(tmp_path: Path) -> None:
    store = FileNamespaceStore(tmp_path / "ns", max_bytes=300_000)
    assert store.put(BIG, tool="read_file") == REF == store.put(BIG)
    assert len(list((tmp_path / "ns").iterdir())) == 1
    other = BIG.replace("PELICAN", "HERON")
    other_ref = store.put(other)
    assert other_ref != REF and len(store.cache.entries) == 1  # the LRU keeps one 200 KB text
    assert store.read(REF) == BIG  # evicted from memory, read from its file
    assert FileNamespaceStore(tmp_path / "ns").read(other_ref) == other
    assert store.read("namespace://tool/0123456789abcdef") is None
    assert store.read("not a reference") is None
    overlay = InMemoryNamespaceStore(store)
    assert overlay.read(REF) == BIG and overlay.put("new text") in find_references(
        f"see <{reference_for('new text')}>"
    )
    assert FileNamespaceStore(tmp_path / "ns").read(reference_for("new text")) is None
