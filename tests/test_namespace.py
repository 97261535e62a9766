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
from llm_wire import FakeOpenAI, Reply, Request

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.middleware import TopicMemoryMiddleware
from langgraph_topics.middleware.fakes import ToolCallingFakeModel
from langgraph_topics.namespace import (
    SEED_LARGE_TOOLS,
    NamespacePolicy,
    digest_of,
    find_references,
    key_information,
    reference_for,
)
from langgraph_topics.namespace.reference import content_digest
from langgraph_topics.namespace.window import SHORTENED_MARK, NamespaceWindow, reference_text
from langgraph_topics.nodes.assemble import assemble_window, tool_exchanges
from langgraph_topics.roles.llm import LlmResponder
from langgraph_topics.roles.llm.calling import CallPolicy
from langgraph_topics.roles.llm.escaping import escape_text
from langgraph_topics.roles.llm.retries import Backoff
from langgraph_topics.roles.native import native_roles
from langgraph_topics.roles.native.responder import NativeResponder
from langgraph_topics.services import thread_directory
from langgraph_topics.state.records import AssembledContext, StoredMessage, TopicResult
from langgraph_topics.stores.namespace_store import (
    FileNamespaceStore,
    InMemoryNamespaceStore,
    NamespaceEntry,
    NamespaceEntryError,
)
from langgraph_topics.tokens import TokenCounter, default_token_counter, message_tokens

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


def tool_result_of(request: Request) -> str:
    """What a responder request shows of the tool result ``t-log`` (the responder sends a
    tool exchange as text: ``[tool result read_file]`` and the result's content)."""
    found = [
        str(m["content"])
        for m in request.messages
        if "[tool result read_file]" in str(m["content"])
    ]
    assert len(found) == 1, [m["role"] for m in request.messages]
    return found[0]


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
    # The next round sees the full text in place of the reference (seed 001 T2), within the
    # budget (its start: the budget is 6,000); the system prompt stays as it was.
    shown = tool_result_of(second)
    assert SECRET in shown and TAIL not in shown and REF not in shown
    assert "…[shortened to fit the window; read it again for the rest]" in shown
    assert second.system == first.system  # no topic here: not a byte of it changed
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
    assert BIG not in first.prompt_text and BIG in tool_result_of(second)
    assert BIG not in second.system
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
        assert SECRET in tool_result_of(wire.of_role("responder")[-1])
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
    # The window of the call after the read: the tool message shows the full text in place
    # of its reference (seed 001 T2); the system message does not carry it.
    result = next(
        m
        for m in model.calls[3]
        if isinstance(m, ToolMessage) and m.tool_call_id == shown.tool_call_id
    )
    assert SECRET in result.text and REF not in result.text
    assert SECRET not in model.calls[3][0].text
    # The middleware's read_namespace read the entry once (the windows only look at it).
    store = memory.services.stores("w").namespace_store
    entry = store.entry(REF)
    assert entry is not None and entry.access_count == 1 and entry.tool_name == "read_log"
    assert entry.args == {"query": "Open the worker log"}

    agent.invoke({"messages": [HumanMessage("read it: namespace://tool/ffffffffffffffff")]}, config)
    assert "No stored tool result" in model.calls[5][-1].text
    assert SECRET not in model.calls[5][0].text  # back to the reference
    again = [m for m in model.calls[5] if isinstance(m, ToolMessage) and m.text.startswith("<")]
    assert again and again[0].text.startswith(f"<{REF}>")
    assert store.entry(REF).access_count == 1  # type: ignore[union-attr]
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
        shown = next(m for m in result["context"]["messages"] if m["id"] == "t-log")
        assert SECRET in shown["content"] and REF not in shown["content"]
        assert SECRET not in result["context"]["system_prompt"]
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


# --- where this follows seed 001 T2 -----------------------------------------------------------


def test_the_seeds_always_large_tools_are_offered_not_the_default() -> None:
    # Seed 001 T2's read_file / list_directory / grep / diff_files are one setting away...
    assert Settings().large_tools == ()
    grep = tool_message("src/app/config.py:42:    timeout = 15", name="grep")
    assert not NamespacePolicy.of(Settings()).is_large(grep)
    seed = NamespacePolicy.of(Settings(large_tools=SEED_LARGE_TOOLS))
    assert seed.is_large(grep)
    assert all(seed.is_large(tool_message("x", name=name)) for name in SEED_LARGE_TOOLS)
    # ... and not the default (docs/tool-results.md): a small result shown by reference costs
    # the window more than itself, and its exact text (here its indentation) only comes back
    # through a read_namespace call, i.e. another model call.
    counter = default_token_counter()
    shown: StoredMessage = {**grep, "content": reference_text(grep, "en")}
    assert message_tokens(shown, counter) > 3 * message_tokens(grep, counter)
    assert grep["content"] not in shown["content"]


def read_file_exchange() -> list[StoredMessage]:
    call: StoredMessage = {
        "id": "a",
        "role": "assistant",
        "content": "",
        "timestamp": "2026-07-20T12:00:00+00:00",
        "tool_calls": [{"id": "c", "name": "read_file", "args": {"path": "worker.log"}}],
    }
    result: StoredMessage = {
        "id": "t",
        "role": "tool",
        "content": BIG,
        "timestamp": "2026-07-20T12:00:01+00:00",
        "tool_call_id": "c",
        "name": "read_file",
    }
    return [call, result]


def assemble_with(
    window: NamespaceWindow,
    quoted: list[StoredMessage],
    budget: int,
    counter: TokenCounter | None = None,
) -> AssembledContext:
    """A window whose topic quotes ``quoted`` (viewed), finished by ``window``."""
    counter = counter or default_token_counter()
    question: StoredMessage = {"id": "u", "role": "user", "content": "The passphrase?"}
    viewed = window.views(quoted)
    result: TopicResult = {
        "topic_id": "logs",
        "name": "Worker logs",
        "brief": "",
        "file": "logs.jsonl",
        "relevance_score": 0.9,
        "referenced_message_ids": [m["id"] for m in viewed],
        "summary": "",
        "round": 0,
    }
    free = window.prepare([question], keep_recent=4, budget=budget, counter=counter)
    context = assemble_window(
        [question],
        {},
        [result],
        {m["id"]: m for m in viewed},
        budget=budget - free,
        keep_recent=4,
        reference_threshold=0.3,
        language="en",
        counter=counter,
        exchanges=tool_exchanges(viewed),
    )
    finished = window.finish(context, budget, counter)
    total = counter(finished["system_prompt"]) + sum(
        message_tokens(m, counter) for m in finished["messages"]
    )
    assert finished["tokens"] == total <= budget
    return finished


def test_a_quoted_reference_read_is_replaced_in_its_quote() -> None:
    store = InMemoryNamespaceStore()
    before = assemble_with(
        NamespaceWindow(store, NamespacePolicy(), "en"), read_file_exchange(), 4000
    )
    assert f"read_file: &lt;{REF}&gt;" in before["system_prompt"]  # quoted, escaped
    assert before["namespace_refs"] == [REF]
    window = NamespaceWindow(store, NamespacePolicy(), "en", reads=[REF], counting=[REF])
    after = assemble_with(window, read_file_exchange(), 4000)
    # The quote of the tool result holds the text (escaped, on its line), not the reference.
    assert f"read_file: {escape_text(BIG[:300])}" in after["system_prompt"].replace("\\n", "\n")
    assert SECRET in after["system_prompt"] and f"&lt;{REF}&gt;" not in after["system_prompt"]
    assert "Full text of" not in after["system_prompt"]
    quoted = next(m for m in after["referenced_messages"] if m["id"] == "t")
    assert quoted["content"].startswith(BIG[:1000]) and SHORTENED_MARK in quoted["content"]
    assert after["namespace_read"] == [REF] and "namespace_refs" not in after
    entry = store.entry(REF)
    assert entry is not None and entry.access_count == 1 and entry.args == {"path": "worker.log"}


def test_a_text_read_is_shortened_again_when_its_quote_costs_more() -> None:
    # A counter to which a quote's escaped line breaks (\\n) cost far more than the text's
    # own: the text read, sized on the text, passes the budget once quoted.
    def counter(text: str) -> int:
        return len(text) // 4 + 30 * text.count("\\n")

    store = InMemoryNamespaceStore()
    window = NamespaceWindow(store, NamespacePolicy(), "en", reads=[REF])
    after = assemble_with(window, read_file_exchange(), 4000, counter)  # within the budget
    quoted = next(m for m in after["referenced_messages"] if m["id"] == "t")
    assert quoted["content"].startswith(BIG[:200]) and quoted["content"].endswith(SHORTENED_MARK)
    assert f"&lt;{REF}&gt;" not in after["system_prompt"]


def test_a_read_the_window_does_not_show_goes_to_the_system_prompt() -> None:
    store = InMemoryNamespaceStore()
    store.put(BIG, tool="read_file")
    window = NamespaceWindow(store, NamespacePolicy(), "en", reads=[REF])
    after = assemble_with(window, [], 4000)
    assert f"Full text of <{REF}>" in after["system_prompt"] and SECRET in after["system_prompt"]
    assert store.entry(REF).access_count == 0  # type: ignore[union-attr]  # not a new read


def test_entries_keep_the_call_and_count_reads_across_a_restart(
    tmp_path: Path, wire: FakeOpenAI
) -> None:
    wire.script(
        "responder",
        Reply(tool_calls=[("read_namespace", {"reference": REF})]),
        Reply("PELICAN-42."),
    )
    with llm_memory(tmp_path / "memory", wire) as memory:
        memory.run_turn("e", {"messages": [*exchange(BIG), HumanMessage("Passphrase?", id="u")]})
    root = thread_directory(tmp_path / "memory", "e") / "namespace"
    path = root / f"{digest_of(REF)}.json"
    written = path.read_bytes()
    entry = FileNamespaceStore(root).entry(REF)
    assert entry is not None and entry.key == REF and entry.content == BIG
    assert entry.tool_name == "read_file" and entry.args == {"path": "worker.log"}
    assert entry.created_at.startswith("20") and entry.access_count == 1
    assert entry.content_summary == key_information(BIG, "en")
    # Another process, another turn, another read: the count survives, the entry is as written.
    wire.script(
        "responder",
        Reply(tool_calls=[("read_namespace", {"reference": REF})]),
        Reply("OSPREY-7."),
    )
    with llm_memory(tmp_path / "memory", wire) as memory:
        memory.run_turn("e", {"messages": [HumanMessage("Rollback tag?", id="u2")]})
    assert FileNamespaceStore(root).entry(REF).access_count == 2  # type: ignore[union-attr]
    assert path.read_bytes() == written
    assert (root / f"{digest_of(REF)}.reads").read_text("ascii").count("\n") == 2


def test_an_entry_stored_before_args_and_counts_still_loads(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    root.mkdir()
    old = {"reference": REF, "tool": "read_file", "sha256": content_digest(BIG), "content": BIG}
    path = root / f"{digest_of(REF)}.json"
    path.write_text(json.dumps(old), "utf-8")
    store = FileNamespaceStore(root)
    entry = store.entry(REF)
    assert entry is not None and entry.content == BIG and entry.tool_name == "read_file"
    assert entry.args == {} and entry.content_summary == "" and entry.access_count == 0
    assert entry.created_at.startswith("20")  # the file's time
    assert store.read(REF) == BIG and store.read(REF) == BIG
    assert FileNamespaceStore(root).entry(REF).access_count == 2  # type: ignore[union-attr]
    assert json.loads(path.read_text("utf-8")) == old  # never rewritten
    assert store.put(BIG, tool="grep", args={"pattern": "x"}) == REF  # the first one stays
    assert FileNamespaceStore(root).entry(REF).args == {}  # type: ignore[union-attr]


def test_in_memory_entries_and_dry_runs_count_apart() -> None:
    base = InMemoryNamespaceStore()
    base.put(BIG, tool="read_file", args={"path": "worker.log"}, summary="log")
    overlay = InMemoryNamespaceStore(base)
    assert overlay.read(REF) == BIG and overlay.read(REF) == BIG
    assert overlay.entry(REF).access_count == 2  # type: ignore[union-attr]
    assert base.entry(REF) == NamespaceEntry(
        REF,
        "read_file",
        {"path": "worker.log"},
        BIG,
        "log",
        base.meta[digest_of(REF) or ""].created_at,
        0,
    )
    assert base.peek(REF) == BIG and base.entry(REF).access_count == 0  # type: ignore[union-attr]
    assert overlay.entry(reference_for("never stored")) is None
