"""``search_memory``: the tool that searches the whole thread, in agents (issue 38 item 5)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from test_middleware import assert_tool_pairs, open_memory, thread

from langgraph_topics import TopicMemory
from langgraph_topics.integrations import search_memory_tool
from langgraph_topics.integrations.search_tool import HITS, render_hits, search_memory
from langgraph_topics.middleware import ACTIVATE_TOPIC, SEARCH_MEMORY, TopicMemoryMiddleware
from langgraph_topics.middleware.fakes import ToolCallingFakeModel
from langgraph_topics.retrieval.history_search import SearchHit

SUBJECTS = {
    "sourdough": "starter flour hydration loaf crumb proofing oven dough levain banneton",
    "kyoto": "temple ryokan shrine train gion april osaka nara kimono matcha",
    "running": "marathon pace shoes intervals tempo knee stretching mileage hills cadence",
    "garden": "tomato compost seedlings mulch watering aphids soil basil trellis pruning",
}
TRIGGERS = {"when did we": SEARCH_MEMORY, "look up": "lookup"}


def question(turn: int) -> str:
    """Ten turns a subject, four of its words each; a tool call every third turn."""
    subject = list(SUBJECTS)[(turn // 10) % len(SUBJECTS)]
    words, k = SUBJECTS[subject].split(), turn % 10
    text = (
        f"{subject} {words[k]} {words[(k + 3) % 10]} {words[(k + 5) % 10]} {words[(k + 7) % 10]}?"
    )
    return text + (" Please look up the details." if turn % 3 == 0 else "")


@tool
def lookup(query: str) -> str:
    """Look the question up in the reference notes."""
    return f"Reference notes on {query[:60]}"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[TopicMemory]:
    with open_memory(tmp_path / "memory") as opened:
        yield opened


def test_the_model_asks_when_and_gets_dated_original_messages(memory: TopicMemory) -> None:
    model = ToolCallingFakeModel(triggers=TRIGGERS)
    agent = create_agent(
        model, [lookup], middleware=[TopicMemoryMiddleware(memory)], checkpointer=InMemorySaver()
    )
    config = thread("ann")
    store = memory.services.stores("ann").topic_store
    turn = 0
    while True:
        agent.invoke({"messages": [HumanMessage(question(turn))]}, config)
        turn += 1
        transcript = memory.transcript("ann")
        kyoto = [m for m in transcript if m["role"] == "user" and m["content"].startswith("kyoto")]
        if len(kyoto) == 10 and all(store.locate(m["id"]) for m in kyoto):
            break
        assert turn < 80, "the kyoto turns were never split"
    # Offered once part of the thread has left the window, not before.
    offered = [SEARCH_MEMORY in bound for bound in model.bound_tools]
    assert not offered[0] and any(offered)
    split_kyoto = kyoto
    calls_before = len(model.calls)
    agent.invoke(
        {"messages": [HumanMessage("When did we talk about the kyoto ryokan and gion?")]}, config
    )
    assert SEARCH_MEMORY in model.bound_tools[calls_before]
    # The model called the tool, got its answer, and answered from it.
    call, answer, final = agent.get_state(config).values["messages"][-3:]
    assert isinstance(call, AIMessage) and call.tool_calls[0]["name"] == SEARCH_MEMORY
    assert isinstance(answer, ToolMessage) and answer.tool_call_id == call.tool_calls[0]["id"]
    text = str(answer.content)
    assert text.startswith("Messages of this conversation matching")
    found = {m["id"]: m for m in split_kyoto}
    shown = [i for i in found if f"[{i}]" in text]
    assert shown, text  # split messages, by id ...
    assert (found[shown[0]]["timestamp"] or "")[:16].replace("T", " ") in text  # ... dated
    hit_lines = [line for line in text.splitlines() if line.startswith("- ")]
    assert not any("When did we talk" in line for line in hit_lines)  # not the question itself
    assert len(text.encode("utf-8")) <= memory.settings.namespace_bytes  # reaches the model whole
    assert isinstance(final, AIMessage) and not final.tool_calls
    assert text in final.text  # the fake model quotes the result it was given
    # The last call saw the result right after its call: pairs valid in every request.
    assert any(isinstance(m, ToolMessage) and m.text == text for m in model.calls[-1])
    for sent in model.calls:
        assert_tool_pairs(sent[1:])
    # The memory recorded the call and its result together; nothing lost.
    transcript = memory.transcript("ann")
    result = next(m for m in transcript if m["role"] == "tool" and m["content"] == text)
    assert result["name"] == SEARCH_MEMORY
    # Asked again, the search does not find its own earlier answer (nor the bare call).
    agent.invoke({"messages": [HumanMessage(question(turn))]}, config)  # a later user turn
    # A background split may still be moving the answer out of the unsplit tail; the ranking
    # below is of the settled thread, not of whichever moment the split reached.
    assert memory.wait_idle("ann", timeout=60)
    asked = "Messages of this conversation matching kyoto ryokan gion, best first; related words"
    # The plain search ranks the answer among the user's kyoto lines (first to fourth, with
    # how the background splits fell), within what one tool call shows ...
    ranked = [h["message_id"] for h in memory.search("ann", asked, limit=HITS)]
    assert answer.id in ranked
    again = search_memory(memory, "ann", asked)
    assert again.startswith("Messages of this conversation matching")
    # ... and the tool shows at least that many hits, so leaving it out is the tool's choice.
    assert len([line for line in again.splitlines() if line.startswith("- ")]) > ranked.index(
        answer.id
    )
    assert f"[{answer.id}]" not in again and f"[{call.id}]" not in again
    report = memory.check("ann")
    assert report.ok, report.findings


def test_the_tool_is_registered_unless_refused(memory: TopicMemory) -> None:
    names = [t.name for t in TopicMemoryMiddleware(memory).tools]
    assert names == [ACTIVATE_TOPIC, "read_namespace", SEARCH_MEMORY]
    assert SEARCH_MEMORY not in [
        t.name for t in TopicMemoryMiddleware(memory, search_memory=False).tools
    ]
    assert TopicMemoryMiddleware(memory, activate_topic=False).tools == []
    alone = TopicMemoryMiddleware(memory, activate_topic=False, search_memory=True).tools
    assert [t.name for t in alone] == [SEARCH_MEMORY]


def test_under_a_tight_budget_search_memory_gives_way_first(tmp_path: Path) -> None:
    budget = 1400
    with open_memory(
        tmp_path / "m", budget=budget, keep_recent=4, wake_by_evidence=False
    ) as memory:
        model = ToolCallingFakeModel(triggers=TRIGGERS)
        agent = create_agent(
            model,
            [lookup],
            middleware=[TopicMemoryMiddleware(memory)],
            checkpointer=InMemorySaver(),
        )
        sleeping: list[bool] = []
        for turn in range(40):
            calls = len(model.calls)
            dormant = memory.exists("bo") and any(
                t["status"] == "dormant" for t in memory.topics("bo")
            )
            agent.invoke({"messages": [HumanMessage(question(turn))]}, thread("bo"))
            sleeping += [dormant] * (len(model.calls) - calls)
        offered = [
            (ACTIVATE_TOPIC in bound, SEARCH_MEMORY in bound)
            for bound, dormant in zip(model.bound_tools, sleeping, strict=True)
            if dormant
        ]
        # While a topic sleeps, activate_topic keeps its room; search_memory gives way first.
        assert offered and all(activate for activate, _ in offered)
        assert (True, False) in offered and (True, True) in offered
        assert memory.state("bo")["context"]["tokens"] <= budget
        assert memory.check("bo").ok


def test_async_agents_search_the_right_thread(tmp_path: Path) -> None:
    model = ToolCallingFakeModel(triggers=TRIGGERS)
    with open_memory(tmp_path / "m", budget=1500, keep_recent=6) as memory:
        agent = create_agent(model, middleware=[TopicMemoryMiddleware(memory)])

        async def run() -> dict[str, Any]:
            for turn in range(40):
                await agent.ainvoke({"messages": [HumanMessage(question(turn))]}, thread("cy"))
            return await agent.ainvoke(
                {"messages": [HumanMessage("When did we discuss the marathon pace?")]},
                thread("cy"),
            )

        result = asyncio.run(run())
        answer = next(m for m in reversed(result["messages"]) if isinstance(m, ToolMessage))
        assert answer.name == SEARCH_MEMORY and "marathon" in str(answer.content)
        assert memory.topics("cy") and memory.check("cy").ok
        assert not memory.exists("default")  # the tool searched the run's own thread


def test_any_agent_can_take_the_tool_itself(memory: TopicMemory) -> None:
    for turn in range(20):
        memory.chat("dee", question(turn))
    model = ToolCallingFakeModel(triggers=TRIGGERS)
    agent = create_agent(model, [search_memory_tool(memory, limit=3)])
    result = agent.invoke(
        {"messages": [HumanMessage("When did we talk about tomato compost?")]}, thread("dee")
    )
    answer = next(m for m in result["messages"] if isinstance(m, ToolMessage))
    lines = [line for line in str(answer.content).splitlines() if line.startswith("- ")]
    assert 1 <= len(lines) <= 3 and all("] user" in x or "] assistant" in x for x in lines)


def test_what_a_model_may_send_is_answered_in_one_line(memory: TopicMemory) -> None:
    memory.chat("eve", "kyoto ryokan near gion?")
    assert search_memory(memory, "eve", "   ") == "Give a few words to look for."
    assert search_memory(memory, "nobody", "ryokan") == (
        "Nothing is stored for this conversation yet."
    )
    bad = search_memory(memory, "eve", "ryokan", since="last week")
    assert bad.startswith("since 'last week': not an ISO-8601 date") and "\n" not in bad
    assert search_memory(memory, "eve", "ryokan", until="2000-01-01") == (
        "No earlier message matches 'ryokan'."
    )


def test_the_answer_stays_within_the_bytes_a_tool_result_may_take() -> None:
    hits: list[SearchHit] = [
        {
            "message_id": f"m{i}",
            "topic_id": "t",
            "topic_name": "认证方案",
            "role": "user",
            "timestamp": "2024-03-02T14:05:00",
            "relevance": 0.9,
            "snippet": "我们决定把刷新令牌放在 httpOnly cookie 里，访问令牌只放内存。" * 6,
        }
        for i in range(8)
    ]
    text = render_hits("令牌", hits, ["登录", "认证"], max_bytes=2048)
    assert len(text.encode("utf-8")) <= 2048
    assert text.count("\n- ") >= 4 and "…" in text and "2024-03-02 14:05 [m0]" in text
    tight = render_hits("令牌", hits, [], max_bytes=600)
    assert len(tight.encode("utf-8")) <= 600 and "more left out" in tight
