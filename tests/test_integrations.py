"""Embedding topic memory: chat-model wrapper, history import, nodes of a user's graph."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from functools import reduce
from operator import add
from pathlib import Path
from typing import Any

import pytest
from conversations import subject_records
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableGenerator, RunnableLambda

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.integrations import (
    context_messages,
    import_chat_history,
    new_user_message,
    with_topic_memory,
)
from langgraph_topics.roles.factory import build_roles
from langgraph_topics.roles.llm import LlmResponder
from langgraph_topics.roles.llm import responder as responder_module
from langgraph_topics.stores.embeddings import UseEmbedder


@pytest.fixture
def memory(tmp_path: Path, embedder: UseEmbedder) -> Any:
    settings = Settings(data_dir=tmp_path / "m", budget_tokens=500, keep_recent=6)
    with TopicMemory(settings=settings, embedder=embedder) as memory:
        yield memory


def test_new_user_message_takes_the_last_user_turn() -> None:
    assert new_user_message("hi").content == "hi"
    assert new_user_message([("user", "a"), ("assistant", "b"), ("user", "c")]).content == "c"
    assert new_user_message({"role": "user", "content": "d"}).content == "d"
    assert new_user_message({"messages": [("user", "e"), ("assistant", "f")]}).content == "e"
    with pytest.raises(ValueError):
        new_user_message([AIMessage("only a reply")])


def test_wrapper_calls_the_model_with_the_assembled_window(memory: TopicMemory) -> None:
    memory.import_messages("t", subject_records(["sourdough", "kyoto", "stocks"]))
    model = FakeListChatModel(responses=["Feed it once a week."])
    calls: list[list[BaseMessage]] = []

    def spy(messages: list[BaseMessage]) -> BaseMessage:
        calls.append(messages)
        return model.invoke(messages)

    chat = with_topic_memory(RunnableLambda(spy), memory, system_prompt="Be brief.")
    reply = chat.invoke(
        [HumanMessage("How often should I feed my sourdough starter in the fridge?")],
        {"configurable": {"thread_id": "t"}},
    )
    assert isinstance(reply, AIMessage) and reply.content == "Feed it once a week."
    (sent,) = calls
    assert isinstance(sent[0], SystemMessage) and str(sent[0].content).startswith("Be brief.")
    window = memory.state("t")["context"]
    assert [m.id for m in sent[1:]] == [m["id"] for m in window["messages"]]
    # The topic results reached the model through the system prompt.
    assert window["topic_ids"] and "starter" in str(sent[0].content)
    # The reply is recorded under the id the wrapper returned; the invariants hold.
    assert memory.transcript("t")[-1] == {**memory.transcript("t")[-1], "id": reply.id}
    assert memory.transcript("t")[-1]["content"] == "Feed it once a week."
    assert memory.check("t").ok


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_history_import_is_incremental(memory: TopicMemory) -> None:
    history = InMemoryChatMessageHistory()
    history.add_message(SystemMessage("ignored"))
    for record in subject_records(["kyoto", "fitness"]):
        cls = HumanMessage if record["role"] == "user" else AIMessage
        history.add_message(cls(record["content"]))
    assert import_chat_history(memory, "h", history) == 16
    assert import_chat_history(memory, "h", history) == 0
    history.add_messages([HumanMessage("One more question"), AIMessage("One more answer")])
    assert import_chat_history(memory, "h", history) == 2
    transcript = memory.transcript("h")
    assert len(transcript) == 18 and transcript[0]["id"] == "history-000001"
    assert memory.topics("h") and memory.check("h").ok


def test_context_messages_put_the_application_prompt_first(memory: TopicMemory) -> None:
    memory.chat("c", "hello")
    messages = context_messages(memory.state("c")["context"], "App rules.")
    assert messages[0].type == "system" and str(messages[0].content).startswith("App rules.")
    assert [m.type for m in messages[1:]] == ["human"]  # assembled before the reply


CONFIG: Any = {"configurable": {"thread_id": "s"}}


def _spy(model: Any, seen: list[list[BaseMessage]]) -> Any:
    """``model`` (its invoke and stream), recording the messages it is called with."""

    def record(messages: Any) -> Any:
        seen.append(list(messages))
        return messages

    return RunnableLambda(record) | model


def test_stream_yields_the_models_tokens_under_the_recorded_id(memory: TopicMemory) -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("Feed it once a week, cold.")]))
    chat = with_topic_memory(model, memory)
    chunks = list(chat.stream({"messages": [HumanMessage("How often do I feed it?")]}, CONFIG))
    assert len(chunks) > 3 and all(isinstance(c, AIMessageChunk) for c in chunks)
    whole = reduce(add, chunks)
    stored = memory.transcript("s")[-1]
    assert whole.content == stored["content"] == "Feed it once a week, cold."
    assert {c.id for c in chunks} == {stored["id"]}
    assert memory.check("s").ok


def test_stream_is_incremental_and_astream_too(memory: TopicMemory) -> None:
    first_seen = threading.Event()

    def tokens(_: Iterator[Any]) -> Iterator[AIMessageChunk]:
        yield AIMessageChunk("first ")
        # Only reachable if the caller got "first " while the model is still answering.
        assert first_seen.wait(20), "the first chunk did not reach the caller in time"
        yield AIMessageChunk("second")

    chat = with_topic_memory(RunnableGenerator(tokens), memory)
    texts = []
    for chunk in chat.stream("Tell me a story", CONFIG):
        texts.append(chunk.content)
        first_seen.set()
    assert texts == ["first ", "second"]
    assert memory.transcript("s")[-1]["content"] == "first second"

    async def collect() -> list[str]:
        first_seen.clear()
        got = []
        async for chunk in chat.astream("And another one", CONFIG):
            got.append(str(chunk.content))
            first_seen.set()
        return got

    assert asyncio.run(collect()) == ["first ", "second"]
    assert [m["content"] for m in memory.transcript("s")][-2:] == [
        "And another one",
        "first second",
    ]


def test_tool_calls_and_tool_results_are_recorded(memory: TopicMemory) -> None:
    call = {"name": "weather", "args": {"city": "Kyoto"}, "id": "call-1"}
    seen: list[list[BaseMessage]] = []
    replies = iter([AIMessage("", tool_calls=[call]), AIMessage("Sunny, 24 °C in Kyoto.")])
    chat = with_topic_memory(_spy(RunnableLambda(lambda _: next(replies)), seen), memory)
    history: list[BaseMessage] = [HumanMessage("What's the weather in Kyoto?")]
    reply = chat.invoke({"messages": history}, CONFIG)
    assert reply.tool_calls and reply.tool_calls[0]["id"] == "call-1" and reply.id
    # An agent loop sends the whole list back with the tool's result.
    history += [reply, ToolMessage("sunny, 24C", tool_call_id="call-1")]
    answer = chat.invoke({"messages": history}, CONFIG)
    assert answer.content == "Sunny, 24 °C in Kyoto."
    # The model saw its own call and the result, in that order.
    last = seen[-1]
    kinds = [(type(m).__name__, getattr(m, "tool_call_id", None)) for m in last[-2:]]
    assert kinds == [("AIMessage", None), ("ToolMessage", "call-1")]
    assert last[-2].tool_calls[0]["id"] == "call-1"
    transcript = memory.transcript("s")
    assert [m["role"] for m in transcript] == ["user", "assistant", "tool", "assistant"]
    assert transcript[1]["id"] == reply.id and transcript[1]["tool_calls"][0]["id"] == "call-1"
    assert transcript[2]["tool_call_id"] == "call-1" and transcript[2]["content"] == "sunny, 24C"
    assert memory.check("s").ok


def test_streamed_tool_calls_are_recorded(memory: TopicMemory) -> None:
    def tool_call(_: Iterator[Any]) -> Iterator[AIMessageChunk]:
        yield AIMessageChunk(
            "",
            tool_call_chunks=[
                {
                    "name": "search",
                    "args": '{"q": ',
                    "id": "call-7",
                    "index": 0,
                    "type": "tool_call_chunk",
                }
            ],
        )
        yield AIMessageChunk(
            "",
            tool_call_chunks=[
                {
                    "name": None,
                    "args": '"ryokan"}',
                    "id": None,
                    "index": 0,
                    "type": "tool_call_chunk",
                }
            ],
        )

    chat = with_topic_memory(RunnableGenerator(tool_call), memory)
    whole = reduce(add, chat.stream("Find me a ryokan", CONFIG))
    assert whole.tool_calls == [
        {"name": "search", "args": {"q": "ryokan"}, "id": "call-7", "type": "tool_call"}
    ]
    stored = memory.transcript("s")[-1]
    assert stored["id"] == whole.id
    assert stored["tool_calls"][0]["args"] == {"q": "ryokan"}


class NoToolsChatModel(FakeListChatModel):
    """A chat model without tool calling (``bind_tools`` is not implemented)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def test_responder_of_a_model_without_tools_just_answers(
    tmp_path: Path,
    embedder: UseEmbedder,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(responder_module, "_NO_TOOLS_NOTED", set())
    settings = Settings(data_dir=tmp_path / "nt", budget_tokens=500, model_retries=0)
    with caplog.at_level(logging.WARNING, logger="langgraph_topics.roles.llm.responder"):
        roles = build_roles(
            settings, strong=NoToolsChatModel(responses=["Hello there!"]), embedder=embedder
        )
        build_roles(settings, strong=NoToolsChatModel(responses=["again"]), embedder=embedder)
    notes = [r.getMessage() for r in caplog.records if "cannot call tools" in r.getMessage()]
    assert len(notes) == 1 and "\n" not in notes[0]  # logged once, one line
    responder = roles.responder
    assert isinstance(responder, LlmResponder) and not responder.offers_tool
    context: Any = {
        "messages": [{"id": "u1", "role": "user", "content": "hi"}],
        "system_prompt": "You are helpful.",
    }
    assert responder.respond(context, can_activate=True) == {
        "text": "Hello there!",
        "activate_query": None,
    }
    with TopicMemory(settings=settings, roles=roles, embedder=embedder) as memory:
        assert memory.chat("nt", "How are you?") == "Hello there!"


def test_stream_of_a_failing_model_records_the_apology(memory: TopicMemory) -> None:
    def broken(_: Iterator[Any]) -> Iterator[AIMessageChunk]:
        raise ConnectionError("provider down")
        yield AIMessageChunk("never")

    def cut_short(_: Iterator[Any]) -> Iterator[AIMessageChunk]:
        yield AIMessageChunk("Half an ")
        raise ConnectionError("connection dropped")

    # Nothing streamed yet: the stored apology comes as the one chunk (as invoke returns it).
    (chunk,) = with_topic_memory(RunnableGenerator(broken), memory).stream("Hi?", CONFIG)
    assert chunk.content == memory.transcript("s")[-1]["content"]
    assert chunk.id == memory.transcript("s")[-1]["id"]
    # Cut short: the caller saw part of an answer, so the stream raises once it is recorded.
    got: list[Any] = []
    with pytest.raises(ConnectionError, match="connection dropped"):
        for piece in with_topic_memory(RunnableGenerator(cut_short), memory).stream("?", CONFIG):
            got.append(piece.content)
    assert got == ["Half an "]
    assert [m["role"] for m in memory.transcript("s")] == ["user", "assistant"] * 2
    assert memory.check("s").ok


def test_a_tool_call_left_unanswered_never_reaches_the_model(memory: TopicMemory) -> None:
    call = {"name": "weather", "args": {"city": "Kyoto"}, "id": "call-9"}
    seen: list[list[BaseMessage]] = []
    replies = iter([AIMessage("", tool_calls=[call]), AIMessage("Let's talk about trains.")])
    chat = with_topic_memory(_spy(RunnableLambda(lambda _: next(replies)), seen), memory)
    chat.invoke("Weather in Kyoto?", CONFIG)
    chat.invoke("Never mind: trains from Tokyo?", CONFIG)  # the call is never answered
    window = seen[-1]
    assert not any(isinstance(m, AIMessage) and m.tool_calls for m in window)
    assert "[tool call not answered: weather]" in [m.content for m in window]
    assert memory.transcript("s")[1]["tool_calls"][0]["id"] == "call-9"  # still recorded


def test_tool_results_continue_the_user_turn_without_a_memory_turn(memory: TopicMemory) -> None:
    modes: list[str] = []
    run_turn = memory.run_turn

    def counted(thread_id: str, payload: Any, **kwargs: Any) -> dict[str, Any]:
        modes.append(str(payload.get("mode")))
        return run_turn(thread_id, payload, **kwargs)

    memory.run_turn = counted  # type: ignore[method-assign]
    seen: list[list[BaseMessage]] = []
    calls = [
        {"name": "weather", "args": {"city": "Kyoto"}, "id": "call-1"},
        {"name": "weather", "args": {"city": "Nara"}, "id": "call-2"},
    ]
    replies = iter(
        [
            AIMessage("", tool_calls=[calls[0]]),
            AIMessage("", tool_calls=[calls[1]]),
            AIMessage("Both sunny."),
        ]
    )
    chat = with_topic_memory(_spy(RunnableLambda(lambda _: next(replies)), seen), memory)
    history: list[BaseMessage] = [HumanMessage("Weather in Kyoto and in Nara?")]
    for call in calls:
        reply = chat.invoke({"messages": history}, CONFIG)
        history += [reply, ToolMessage(f"sunny in {call['args']['city']}", tool_call_id=call["id"])]
    turn = memory.state("s")["turn"]
    answer = chat.invoke({"messages": history}, CONFIG)
    assert answer.content == "Both sunny."
    # One memory turn for the user message; the two tool rounds reassembled only.
    assert modes.count("chat") == 1
    assert memory.state("s")["turn"] == turn
    # The last call saw both exchanges, each call before its result.
    kinds = [type(m).__name__ for m in seen[-1][-4:]]
    assert kinds == ["AIMessage", "ToolMessage", "AIMessage", "ToolMessage"]
    assert [m["role"] for m in memory.transcript("s")] == [
        "user", "assistant", "tool", "assistant", "tool", "assistant",
    ]  # fmt: skip
    report = memory.check("s")
    assert report.ok, report.findings


def test_node_helpers_in_a_react_loop_reassemble_tool_rounds(tmp_path: Path) -> None:
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.prebuilt import ToolNode

    from langgraph_topics import TopicServices
    from langgraph_topics.bench.fakes import HashEmbedder
    from langgraph_topics.integrations import topic_bookkeeping_node, topic_context_node
    from langgraph_topics.middleware.fakes import ToolCallingFakeModel
    from langgraph_topics.roles.native import native_roles
    from langgraph_topics.state.schema import TopicState

    @tool
    def lookup(query: str) -> str:
        """Look the question up."""
        return f"notes on {query[:30]}"

    settings = Settings(data_dir=tmp_path / "n", budget_tokens=600, keep_recent=6)
    hashed = HashEmbedder()
    services = TopicServices.open(settings, roles=native_roles(hashed, settings), embedder=hashed)
    verdicts: list[int] = []
    windows = services.roles.topic_window
    evaluate = windows.evaluate_with_evidence  # type: ignore[attr-defined]

    def counted(*args: Any, **kwargs: Any) -> Any:
        verdicts.append(1)
        return evaluate(*args, **kwargs)

    windows.evaluate_with_evidence = counted  # type: ignore[attr-defined]
    model = ToolCallingFakeModel(triggers={"look up": "lookup"})
    bound = model.bind_tools([lookup])
    seen_verdicts: list[int] = []

    def agent(state: TopicState) -> dict[str, Any]:
        seen_verdicts.append(len(verdicts))
        return {"messages": [bound.invoke(context_messages(state["context"]))]}

    builder = StateGraph(TopicState)
    builder.add_node("topic_context", topic_context_node(services))
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_node("topic_bookkeeping", topic_bookkeeping_node(services))
    builder.add_edge(START, "topic_context")
    builder.add_edge("topic_context", "agent")
    builder.add_conditional_edges(
        "agent",
        lambda s: "tools" if s["messages"][-1].tool_calls else "topic_bookkeeping",
    )
    builder.add_edge("tools", "topic_context")
    builder.add_edge("topic_bookkeeping", END)
    app = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "rex"}, "recursion_limit": 20}
    for turn in range(12):
        text = f"kyoto ryokan {turn} temple?" + (" Please look up it." if turn % 3 == 0 else "")
        state = app.invoke({"messages": [HumanMessage(text)]}, config)
        if turn % 3 == 0:
            # The tool round's call saw the result and answered from it.
            assert state["messages"][-1].content.startswith("Here is what I found: notes on")
            assert seen_verdicts[-1] == seen_verdicts[-2]  # no topic window for the round
    assert verdicts, "no topic window ran: nothing was split"
    assert len(model.calls) == 12 + 4
    assert state["total_messages"] == 2 * 12 + 2 * 4


def _hashed_services(path: Path, **overrides: Any) -> Any:
    from langgraph_topics import TopicServices
    from langgraph_topics.bench.fakes import HashEmbedder
    from langgraph_topics.roles.native import native_roles

    settings = Settings(data_dir=path, **{"budget_tokens": 600, "keep_recent": 6, **overrides})
    hashed = HashEmbedder()
    return TopicServices.open(settings, roles=native_roles(hashed, settings), embedder=hashed)


def test_topic_memory_nodes_wire_a_react_agent_that_sees_its_tool_results(tmp_path: Path) -> None:
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import StateGraph
    from langgraph.prebuilt import ToolNode

    from langgraph_topics.integrations import topic_memory_nodes
    from langgraph_topics.middleware.fakes import ToolCallingFakeModel
    from langgraph_topics.state.schema import TopicState

    @tool
    def lookup(query: str) -> str:
        """Look the question up."""
        return f"notes on {query[:30]}"

    services = _hashed_services(tmp_path / "n")
    model = ToolCallingFakeModel(triggers={"look up": "lookup"})
    bound = model.bind_tools([lookup])

    def agent(state: TopicState) -> dict[str, Any]:
        return {"messages": [bound.invoke(context_messages(state["context"], "Be brief."))]}

    builder = StateGraph(TopicState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([lookup]))
    topic_memory_nodes(builder, "agent", "tools", services=services)
    app = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "rex"}, "recursion_limit": 12}
    sizes = []
    subjects = ["kyoto ryokan temple", "sourdough starter flour", "marathon pace shoes"]
    for turn in range(30):
        text = f"{subjects[turn // 10]} {turn}?" + (" Please look up it." if turn % 3 == 0 else "")
        state = app.invoke({"messages": [HumanMessage(text)]}, config)  # no recursion error
        if turn % 3 == 0:  # the call after the tool round saw the result and answered from it
            assert state["messages"][-1].content == f"Here is what I found: notes on {text[:30]}"
            assert isinstance(model.calls[-1][-1], ToolMessage)
        sizes.append(len(state["messages"]))
    assert len(model.calls) == 30 + 10  # one call per turn, one more per tool round
    assert state["total_messages"] == 2 * 30 + 2 * 10
    topics = services.stores("rex").topic_store.topic_ids()
    assert topics, "nothing was stored in topics"
    split = len(services.stores("rex").topic_store.message_ids())
    assert split + len(state["messages"]) == state["total_messages"]
    assert max(sizes[10:]) <= 20 < state["total_messages"] // 3  # bounded while the thread grew


def test_the_compiled_graph_as_a_subgraph_node_is_refused_at_its_first_run(
    tmp_path: Path,
) -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, MessagesState, StateGraph

    from langgraph_topics import TopicContext, build_graph
    from langgraph_topics.errors import InputError
    from langgraph_topics.state.schema import TopicState

    services = _hashed_services(tmp_path / "s")
    for schema in (MessagesState, TopicState):
        builder = StateGraph(schema)
        builder.add_node("memory", build_graph())
        builder.add_edge(START, "memory")
        builder.add_edge("memory", END)
        app = builder.compile(checkpointer=InMemorySaver())
        config: Any = {"configurable": {"thread_id": f"p-{schema.__name__}"}}
        with pytest.raises(InputError) as raised:
            app.invoke(
                {"messages": [HumanMessage("hello")]},
                config,
                context=TopicContext(services=services),
            )
        message = str(raised.value)
        assert len(message.splitlines()) == 1
        assert "cannot be the node 'memory' of another graph" in message
        assert "topic_memory_nodes" in message and "TopicMemoryMiddleware" in message
        assert not services.stores(f"p-{schema.__name__}").topic_store.topic_ids()
