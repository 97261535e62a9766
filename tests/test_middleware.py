"""Topic memory as ``create_agent`` middleware: windows, tool exchanges, bounded state, async."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.runtime import ExecutionInfo, Runtime
from pydantic import Field

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.errors import InputError
from langgraph_topics.middleware import ACTIVATE_TOPIC, TopicMemoryMiddleware
from langgraph_topics.middleware.fakes import ToolCallingFakeModel
from langgraph_topics.middleware.request_tokens import FixedParts, request_tokens, tool_schema
from langgraph_topics.roles.factory import build_roles
from langgraph_topics.roles.native import native_roles

SUBJECTS = {
    "sourdough": [
        "starter", "flour", "hydration", "loaf", "crumb",
        "proofing", "oven", "dough", "levain", "banneton",
    ],
    "kyoto": [
        "temple", "ryokan", "shrine", "train", "gion",
        "bamboo", "osaka", "nara", "kimono", "matcha",
    ],
    "running": [
        "marathon", "pace", "shoes", "intervals", "tempo",
        "knee", "stretching", "mileage", "hills", "cadence",
    ],
    "garden": [
        "tomato", "compost", "seedlings", "mulch", "watering",
        "aphids", "soil", "basil", "trellis", "pruning",
    ],
    "guitar": [
        "chord", "fret", "strumming", "capo", "tuning",
        "scale", "pick", "strings", "barre", "arpeggio",
    ],
    "taxes": [
        "deduction", "receipt", "invoice", "refund", "filing",
        "income", "pension", "audit", "bracket", "allowance",
    ],
}  # fmt: skip
"""Ten words a subject (no month names: one makes a question a date query, which wakes topics
of its own)."""
ORDER = list(SUBJECTS)
TRIGGERS = {"look up": "lookup", "convert": "convert", "recall it": ACTIVATE_TOPIC}


def question(turn: int, per_subject: int = 10) -> str:
    """The user's message of ``turn``: ten turns per subject; tools every third turn."""
    subject = ORDER[(turn // per_subject) % len(ORDER)]
    words, k = SUBJECTS[subject], turn % 10
    text = (
        f"{subject} {words[k]} {words[(k + 3) % 10]} {words[(k + 5) % 10]} {words[(k + 7) % 10]}?"
    )
    if turn % 3 == 0:
        text += " Please look up the details."
    if turn % 9 == 0:
        text += " And convert the figures."
    return text


@tool
def lookup(query: str) -> str:
    """Look the question up in the reference notes."""
    return f"Reference notes on {query[:60]}"


@tool
def convert(text: str) -> str:
    """Convert the figures of the text to metric units."""
    return f"Converted figures of {text[:40]}"


@tool(return_direct=True)
def finish(text: str) -> str:
    """Answer the user directly with a canned text."""
    return "Done, as requested."


def open_memory(path: Path, budget: int = 2000, **overrides: Any) -> TopicMemory:
    settings = Settings(data_dir=path, budget_tokens=budget, **overrides)
    embedder = HashEmbedder()
    return TopicMemory(settings=settings, roles=native_roles(embedder, settings), embedder=embedder)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[TopicMemory]:
    with open_memory(tmp_path / "memory") as opened:
        yield opened


def thread(name: str) -> Any:
    return {"configurable": {"thread_id": name}}


def assert_tool_pairs(messages: Sequence[BaseMessage]) -> None:
    """Invariant 8 in what a model got: every call with its results, every result after its call."""
    calls: dict[str, int] = {}
    answered: set[str] = set()
    for position, message in enumerate(messages):
        if isinstance(message, AIMessage):
            calls.update({call["id"] or "": position for call in message.tool_calls})
        elif isinstance(message, ToolMessage):
            assert calls.get(message.tool_call_id, len(messages)) < position, message.tool_call_id
            answered.add(message.tool_call_id)
    assert set(calls) == answered, set(calls) ^ answered


def test_sixty_turns_with_tool_calls_at_a_2000_token_budget(memory: TopicMemory) -> None:
    model = ToolCallingFakeModel(triggers=TRIGGERS)
    middleware = TopicMemoryMiddleware(memory)
    agent = create_agent(
        model,
        [lookup, convert],
        system_prompt="You are a helpful assistant.",
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    config = thread("alice")
    sizes: list[int] = []
    statuses: set[str] = set()
    score_histories: list[dict[str, list[float]]] = []
    calls_before = 0
    for turn in range(60):
        result = agent.invoke({"messages": [HumanMessage(question(turn))]}, config)
        assert isinstance(result["messages"][-1], AIMessage)
        assert not result["messages"][-1].tool_calls
        values = memory.state("alice")
        # The agent's checkpointed messages mirror the memory's working set: split ones left.
        agent_messages = agent.get_state(config).values["messages"]
        assert [m.id for m in agent_messages] == [m.id for m in values["messages"]]
        sizes.append(len(agent_messages))
        # Each model call got one system message (the agent's prompt, then the topic context)
        # and the window's messages, with every tool call next to its results.
        for sent in model.calls[calls_before:]:
            assert isinstance(sent[0], SystemMessage)
            assert str(sent[0].content).startswith("You are a helpful assistant.")
            assert not any(isinstance(m, SystemMessage) for m in sent[1:])
            assert_tool_pairs(sent[1:])
        calls_before = len(model.calls)
        window = values["context"]
        assert window["tokens"] <= 2000
        statuses |= {f"{t}:{r['status']}" for t, r in values["topics"].items()}
        score_histories.append({t: r["scores"] for t, r in values["topics"].items()})
    # The last call saw exactly the last assembled window.
    last_sent = model.calls[-1]
    assert [m.id for m in last_sent[1:]] == [m["id"] for m in window["messages"]]
    assert window["system_prompt"] in str(last_sent[0].content)

    # The memory split; the agent's messages stayed bounded while the thread grew.
    report = memory.check("alice")
    assert report.ok, report.findings
    assert report.counts["total"] == values["total_messages"] >= 160
    assert report.counts["split"] > 100
    first_split = next(turn for turn, history in enumerate(score_histories) if history)
    # The 70 % trigger lets about 42 short messages gather in a 1,875-token window (no dormant
    # topic: no activate_topic schema to count) before the next split.
    assert max(sizes[first_split + 5 :]) <= 45 < report.counts["total"] // 3
    topics = memory.topics("alice")
    assert len(topics) >= 4

    # Every tool call is recorded, with its result, in the same place (one topic or unsplit).
    transcript = memory.transcript("alice")
    assert len(transcript) == report.counts["total"]
    assert len({m["id"] for m in transcript}) == len(transcript)
    calls = {
        call["id"]: call["name"]
        for m in transcript
        for call in m.get("tool_calls", [])  # type: ignore[union-attr]
    }
    results = {m["tool_call_id"]: m for m in transcript if m["role"] == "tool"}
    expected_calls = sum(1 for t in range(60) if t % 3 == 0) + sum(
        1 for t in range(60) if t % 9 == 0
    )
    assert len(calls) == expected_calls and set(results) == set(calls)
    store = memory.services.stores("alice").topic_store
    call_places = {
        call["id"]: store.locate(m["id"])
        for m in transcript
        for call in m.get("tool_calls", [])  # type: ignore[union-attr]
    }
    for call_id, result in results.items():
        assert store.locate(result["id"]) == call_places[call_id]
        prefix = "Reference notes" if calls[call_id] == "lookup" else "Converted figures"
        assert result["content"].startswith(prefix)

    # Scores were recorded turn after turn (sliding windows), and topics fell dormant.
    assert any(len(scores) == 5 for scores in score_histories[-1].values())
    assert score_histories[-1] != score_histories[-2]
    assert any(status.endswith(":dormant") for status in statuses)


def test_activate_topic_wakes_a_dormant_topic_for_the_next_call(tmp_path: Path) -> None:
    # The tool itself: the question's evidence would otherwise wake the topic first.
    with open_memory(tmp_path / "m", wake_by_evidence=False) as memory:
        model = ToolCallingFakeModel(triggers=TRIGGERS)
        agent = create_agent(
            model,
            [lookup, convert],
            middleware=[TopicMemoryMiddleware(memory)],
            checkpointer=InMemorySaver(),
        )
        config = thread("bob")
        turn, calls_before = 0, 0
        while not any(t["status"] == "dormant" for t in memory.topics("bob")):
            calls_before = len(model.calls)
            agent.invoke({"messages": [HumanMessage(question(turn))]}, config)
            turn += 1
            assert turn < 60, "no topic fell dormant"
        # Activation is offered only while something is dormant (and the model binds tools):
        # not before the user turn whose bookkeeping put a topic to sleep.
        assert all(ACTIVATE_TOPIC not in bound for bound in model.bound_tools[:calls_before])
        dormant = next(t for t in memory.topics("bob") if t["status"] == "dormant")
        asked = memory.services.stores("bob").topic_store.messages(dormant["id"])[0]["content"]
        calls_before = len(model.calls)
        events = [
            chunk
            for chunk in agent.stream(
                {"messages": [HumanMessage(f"{asked} Please recall it.")]},
                config,
                stream_mode="custom",
            )
        ]
        assert ACTIVATE_TOPIC in model.bound_tools[calls_before]
        result = agent.get_state(config).values
        call, answer, final = result["messages"][-3:]
        assert isinstance(call, AIMessage) and call.tool_calls[0]["name"] == ACTIVATE_TOPIC
        assert isinstance(answer, ToolMessage) and answer.content.startswith("Recalled ")
        assert isinstance(final, AIMessage) and not final.tool_calls
        assert {"event": "activated", "reason": "tool_call", "topics": [dormant["id"]]} in events
        # The call after the tool read the woken topic and quoted it in the window.
        values = memory.state("bob")
        assert dormant["id"] in values["topic_results"]
        assert dormant["id"] in values["context"]["topic_ids"]
        assert len(model.calls) == calls_before + 2
        assert dormant["name"] in str(model.calls[-1][0].content)
        assert_tool_pairs(model.calls[-1][1:])
        report = memory.check("bob")
        assert report.ok, report.findings


class AsyncCountingMiddleware(TopicMemoryMiddleware):
    """Counts the async hooks' calls."""

    async_calls = 0

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        self.async_calls += 1
        return await super().awrap_model_call(request, handler)

    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any]:
        self.async_calls += 1
        return await super().aafter_model(state, runtime)


def test_async_run_records_tool_exchanges(memory: TopicMemory) -> None:
    model = ToolCallingFakeModel(triggers=TRIGGERS)
    middleware = AsyncCountingMiddleware(memory)
    agent = create_agent(
        model, [lookup, convert], middleware=[middleware], checkpointer=InMemorySaver()
    )

    async def run() -> list[dict[str, Any]]:
        return [
            await agent.ainvoke({"messages": [HumanMessage(question(turn))]}, thread("carol"))
            for turn in range(10)
        ]

    results = asyncio.run(run())
    assert all(not r["messages"][-1].tool_calls for r in results)
    transcript = memory.transcript("carol")
    assert len(transcript) == memory.state("carol")["total_messages"] == 10 * 2 + 4 + 6
    assert sum(1 for m in transcript if m["role"] == "tool") == 6
    for sent in model.calls:
        assert_tool_pairs(sent[1:])
    assert middleware.async_calls == 2 * len(model.calls) == 2 * 14
    assert memory.check("carol").ok


def test_a_repeated_after_model_does_not_count_the_turn_twice(tmp_path: Path) -> None:
    with open_memory(tmp_path / "m", budget=400, keep_recent=4) as memory:
        middleware = TopicMemoryMiddleware(memory)
        agent = create_agent(
            ToolCallingFakeModel(), middleware=[middleware], checkpointer=InMemorySaver()
        )
        for turn in range(12):
            agent.invoke({"messages": [HumanMessage(question(turn))]}, thread("fay"))
        before = memory.state("fay")
        assert before["topics"]
        # after_model again, as after a crash between the memory's write and the agent's
        # checkpoint: the reply is recorded already, so nothing is counted twice.
        window = {"context": before["context"], "turn": before["turn"], "can_activate": False}
        state = {**agent.get_state(thread("fay")).values, "topic_window": window}
        info = ExecutionInfo(checkpoint_id="", checkpoint_ns="", task_id="", thread_id="fay")
        middleware.after_model(state, Runtime(execution_info=info))  # type: ignore[arg-type]
        after = memory.state("fay")
        assert after["topics"] == before["topics"] and after["total_messages"] == 24
        assert memory.check("fay").ok


def test_the_memorys_own_model_calls_stay_out_of_the_agents_stream(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "m", budget_tokens=400, keep_recent=4, model_retries=0)
    embedder = HashEmbedder()
    # A topic-window model whose (malformed) replies must never be streamed as the agent's.
    cheap = GenericFakeChatModel(messages=itertools.repeat(AIMessage("INTERNAL TOPIC WINDOW")))
    roles = build_roles(settings, per_role={"topic_window": cheap}, embedder=embedder)
    with TopicMemory(settings=settings, roles=roles, embedder=embedder) as memory:
        model = ToolCallingFakeModel(triggers=TRIGGERS)
        agent = create_agent(
            model,
            [lookup, convert],
            middleware=[TopicMemoryMiddleware(memory)],
            checkpointer=InMemorySaver(),
        )
        streamed: list[str] = []
        for turn in range(8):
            for _, (message, _) in agent.stream(
                {"messages": [HumanMessage(question(turn))]},
                thread("gus"),
                stream_mode="messages",
                subgraphs=True,
            ):
                streamed.append(str(message.content))
        assert memory.topics("gus") and any("Re: " in text for text in streamed)
        assert not any("INTERNAL" in text for text in streamed)


def test_model_without_tool_support_is_not_offered_activate_topic(memory: TopicMemory) -> None:
    # GenericFakeChatModel has no bind_tools: binding activate_topic would raise.
    model = GenericFakeChatModel(messages=iter(AIMessage(f"answer {i}") for i in range(30)))
    agent = create_agent(model, middleware=[TopicMemoryMiddleware(memory)])
    for turn in range(30):
        result = agent.invoke({"messages": [HumanMessage(question(turn))]}, thread("dave"))
        assert result["messages"][-1].content == f"answer {turn}"
    assert memory.state("dave")["total_messages"] == 60
    assert memory.check("dave").ok
    assert TopicMemoryMiddleware(memory, activate_topic=False).tools == []


def test_return_direct_tool_result_is_recorded_at_the_end_of_the_run(memory: TopicMemory) -> None:
    model = ToolCallingFakeModel(triggers={"finish": "finish"})
    agent = create_agent(
        model, [finish], middleware=[TopicMemoryMiddleware(memory)], checkpointer=InMemorySaver()
    )
    result = agent.invoke({"messages": [HumanMessage("Please finish now.")]}, thread("erin"))
    assert isinstance(result["messages"][-1], ToolMessage)
    transcript = memory.transcript("erin")
    assert [m["role"] for m in transcript] == ["user", "assistant", "tool"]
    assert transcript[-1]["content"] == "Done, as requested."
    assert memory.check("erin").ok


class _SnapshotModel(ToolCallingFakeModel):
    """Notes, at each call, how many topic-window verdicts the memory had made so far."""

    verdicts: list[int] = Field(default_factory=list)
    seen: list[int] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.seen.append(len(self.verdicts))
        return super()._generate(messages, *args, **kwargs)


def test_tool_rounds_of_one_user_turn_reuse_its_memory_turn(memory: TopicMemory) -> None:
    modes: list[str] = []
    run_turn = memory.run_turn

    def counted_turn(thread_id: str, payload: Any, **kwargs: Any) -> dict[str, Any]:
        modes.append(str(payload.get("mode")))
        return run_turn(thread_id, payload, **kwargs)

    memory.run_turn = counted_turn  # type: ignore[method-assign]
    model = _SnapshotModel(triggers=TRIGGERS)
    windows = memory.services.roles.topic_window
    for name in ("evaluate", "evaluate_with_evidence"):
        original = getattr(windows, name, None)
        if original is not None:

            def counted(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
                model.verdicts.append(1)
                return _original(*args, **kwargs)

            setattr(windows, name, counted)
    agent = create_agent(
        model,
        [lookup, convert],
        middleware=[TopicMemoryMiddleware(memory)],
        checkpointer=InMemorySaver(),
    )
    turns = 30
    for turn in range(turns):
        agent.invoke({"messages": [HumanMessage(question(turn))]}, thread("hal"))
    tool_turns = [t for t in range(turns) if t % 3 == 0]
    # A model call per user turn and one per tool round (two tools in one call: one round)...
    assert len(model.calls) == turns + len(tool_turns)
    # ... but one memory turn per user message: no estimate, split or fan-out for a round.
    assert modes.count("assemble") == turns
    assert model.verdicts, "the topic windows never ran"
    rounds = [i for i, sent in enumerate(model.calls) if isinstance(sent[-1], ToolMessage)]
    assert len(rounds) == len(tool_turns)
    for call in rounds:
        assert model.seen[call] == model.seen[call - 1]  # no verdict since the turn's first call
        # The round's window holds the new exchange, whole: the call, then its results.
        assert_tool_pairs(model.calls[call][1:])
        assert any(isinstance(m, AIMessage) and m.tool_calls for m in model.calls[call])
    report = memory.check("hal")
    assert report.ok, report.findings
    results = len(tool_turns) + sum(1 for t in range(turns) if t % 9 == 0)
    assert report.counts["total"] == 2 * turns + len(tool_turns) + results


def _long_prompt(tokens: int, counter: Callable[[str], int]) -> str:
    words = "Answer briefly, cite what the user said earlier, and use the tools when asked. "
    text = words * (tokens // max(1, counter(words)) + 1)
    while counter(text) > tokens:
        text = text[: len(text) - 20]
    return text


def test_the_budget_counts_the_agents_system_prompt_and_tool_schemas(tmp_path: Path) -> None:
    with open_memory(tmp_path / "m", budget=1500) as memory:
        counter = memory.services.token_counter
        prompt = _long_prompt(600, counter)
        middleware = TopicMemoryMiddleware(memory)
        model = ToolCallingFakeModel(triggers=TRIGGERS)
        agent = create_agent(
            model,
            [lookup, convert],
            system_prompt=prompt,
            middleware=[middleware],
            checkpointer=InMemorySaver(),
        )
        every_tool = {t.name: t for t in [lookup, convert, *middleware.tools]}
        for turn in range(40):
            agent.invoke({"messages": [HumanMessage(question(turn))]}, thread("ivy"))
        sizes = []
        for sent, bound in zip(model.calls, model.bound_tools, strict=True):
            schemas = [tool_schema(every_tool[name]) for name in bound]
            assert isinstance(sent[0], SystemMessage)
            assert str(sent[0].content).startswith(prompt.rstrip())
            sizes.append(request_tokens(sent[0], sent[1:], schemas, counter))
        # Without the agent's prompt and tools counted, the windows alone came near 1,200.
        assert max(sizes) <= 1500
        assert max(sizes) > 1500 - 150  # the memory's part shrank to fit, it did not vanish
        window_tokens = memory.state("ivy")["context"]["tokens"]
        assert window_tokens <= 1500 - FixedParts.of(prompt, [lookup, convert], counter).total
        assert memory.check("ivy").ok


def test_a_budget_too_small_for_the_agents_own_parts_is_one_clear_error(tmp_path: Path) -> None:
    with open_memory(tmp_path / "m", budget=800) as memory:
        prompt = _long_prompt(700, memory.services.token_counter)
        agent = create_agent(
            ToolCallingFakeModel(triggers=TRIGGERS),
            [lookup],
            system_prompt=prompt,
            middleware=[TopicMemoryMiddleware(memory)],
            checkpointer=InMemorySaver(),
        )
        with pytest.raises(InputError) as raised:
            agent.invoke({"messages": [HumanMessage("Hello there")]}, thread("jon"))
        message = str(raised.value)
        assert len(message.splitlines()) == 1
        assert "budget_tokens=800 is too small for this agent" in message
        assert "system prompt takes" in message and "raise budget_tokens to" in message
        # Refused before anything was recorded.
        assert not memory.state("jon").get("messages")


def _quoted_replies_have_their_question(system: str) -> bool:
    """Every quoted reply (the fake's ``Re: <question>``) sits under its question or a note."""
    lines = system.splitlines()
    for place, line in enumerate(lines):
        if not line.startswith("assistant: Re: "):
            continue
        asked = line.removeprefix("assistant: Re: ")
        above = lines[place - 1] if place else ""
        noted = above.startswith('(in reply to user: "') and asked.startswith(
            above.removeprefix('(in reply to user: "').removesuffix('")').removesuffix("…")
        )
        if above != f"user: {asked}" and not noted:
            return False
    return True


def test_every_request_opens_with_a_user_message_and_alternates(tmp_path: Path) -> None:
    # Tight: the agent's prompt leaves the memory a few hundred tokens, so older exchanges,
    # quotes and the recent part's first exchange are cut often; a greeting opens the thread.
    with open_memory(tmp_path / "m", budget=1200, keep_recent=7) as memory:
        prompt = _long_prompt(500, memory.services.token_counter)
        model = ToolCallingFakeModel(triggers=TRIGGERS)
        agent = create_agent(
            model,
            [lookup, convert],
            system_prompt=prompt,
            middleware=[TopicMemoryMiddleware(memory)],
            checkpointer=InMemorySaver(),
        )
        config = thread("kim")
        greeting = AIMessage("Hello! I remember what you tell me.", id="greeting")
        agent.invoke({"messages": [greeting, HumanMessage(question(0))]}, config)
        for turn in range(1, 45):
            agent.invoke({"messages": [HumanMessage(question(turn))]}, config)
        quoted = 0
        for sent in model.calls:
            assert isinstance(sent[0], SystemMessage)
            assert isinstance(sent[1], HumanMessage), [type(m).__name__ for m in sent]
            for before, after in itertools.pairwise(sent[1:]):
                assert not (isinstance(before, HumanMessage) and isinstance(after, HumanMessage))
                assert not (
                    isinstance(before, AIMessage)
                    and isinstance(after, AIMessage)
                    and not before.tool_calls
                )
            assert_tool_pairs(sent[1:])
            system = str(sent[0].content)
            assert _quoted_replies_have_their_question(system), system
            quoted += system.count("\nassistant: Re: ")
        assert quoted, "no reply was ever quoted: the test did not test the notes"
        assert memory.check("kim").ok


def test_alternation_off_sends_the_window_as_it_is(tmp_path: Path) -> None:
    with open_memory(tmp_path / "m", alternating_roles=False) as memory:
        model = ToolCallingFakeModel(triggers=TRIGGERS)
        agent = create_agent(model, [lookup], middleware=[TopicMemoryMiddleware(memory)])
        greeting = AIMessage("Hello! I remember what you tell me.", id="greeting")
        agent.invoke({"messages": [greeting, HumanMessage("Hi")]}, thread("lu"))
        assert isinstance(model.calls[0][1], AIMessage)
        assert not memory.state("lu")["context"].get("alternating")
