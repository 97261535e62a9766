"""Put topic memory in front of any chat model or runnable.

Per user message the wrapper runs one full turn of the topic-memory graph for the thread: it
records the message, assembles the topic context (topic results, unsplit and recent messages),
calls the wrapped model with the assembled messages in place of the graph's own responder,
records the reply (its tool calls included) and updates the topic scores. The results of the
tools the model called continue that turn: they are recorded and the window is assembled again
from the turn's topic results, with no topic windows run. The caller sends only what is new;
memory has the rest.
"""

from __future__ import annotations

import contextvars
import queue
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.messages.utils import message_chunk_to_message
from langchain_core.prompt_values import PromptValue
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import run_in_executor
from langgraph.runtime import ExecutionInfo, Runtime

from langgraph_topics.integrations.messages import context_messages
from langgraph_topics.integrations.tool_rounds import (
    continues_user_turn,
    stamped,
    tool_round_update,
)
from langgraph_topics.memory import TopicMemory
from langgraph_topics.nodes.respond import respond
from langgraph_topics.roles.protocols import ResponderReply
from langgraph_topics.services import TopicContext, TopicServices
from langgraph_topics.settings import RUN_SETTINGS_KEY
from langgraph_topics.state.messages import text_of
from langgraph_topics.state.records import AssembledContext
from langgraph_topics.state.schema import TopicState

ChunkSink = Callable[[AIMessageChunk], None]


def _as_reply(output: Any) -> AIMessage:
    """A model's output as a (non-chunk) AI message."""
    if isinstance(output, AIMessageChunk):
        return cast(AIMessage, message_chunk_to_message(output))
    if isinstance(output, AIMessage):
        return output
    if isinstance(output, BaseMessage):
        return AIMessage(content=output.content)
    return AIMessage(content=str(output))


def _as_chunk(piece: Any) -> AIMessageChunk:
    """One streamed piece of a model's output as an AI message chunk."""
    if isinstance(piece, AIMessageChunk):
        return piece
    if isinstance(piece, AIMessage):
        return AIMessageChunk(**piece.model_dump(exclude={"type"}))
    if isinstance(piece, BaseMessage):
        return AIMessageChunk(content=piece.content)
    return AIMessageChunk(content=str(piece))


def _paired_tool_messages(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The window with every tool call answered and every tool result after its call.

    Providers refuse a tool call without its result (the user moved on without answering it)
    and a result whose call is not in the window: an unanswered call is dropped from its reply
    (named in the text when the reply had none), an orphan result becomes a user message.
    """
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    called: set[str | None] = set()
    paired: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, AIMessage) and message.tool_calls:
            kept = [call for call in message.tool_calls if call["id"] in answered]
            if len(kept) < len(message.tool_calls):
                names = ", ".join(c["name"] for c in message.tool_calls if c not in kept)
                text = text_of(message) or f"[tool call not answered: {names}]"
                message = AIMessage(content=text, tool_calls=kept, id=message.id)
            called.update(call["id"] for call in kept)
        elif isinstance(message, ToolMessage) and message.tool_call_id not in called:
            label = f"[tool result {message.name}]" if message.name else "[tool result]"
            message = HumanMessage(f"{label}\n{text_of(message)}", id=message.id)
        paired.append(message)
    return paired


class _RunnableResponder:
    """The responder role served by an arbitrary runnable (one instance per call).

    With a ``sink`` the model is streamed and every chunk goes to the sink as it arrives,
    carrying ``reply_id``, the id the reply is recorded under.
    """

    def __init__(
        self,
        model: Runnable[Any, Any],
        system_prompt: str | None,
        config: RunnableConfig | None,
        *,
        sink: ChunkSink | None = None,
    ) -> None:
        self.model = model
        self.system_prompt = system_prompt
        self.config = config
        self.sink = sink
        self.reply_id = f"msg-{uuid.uuid4().hex[:12]}"
        self.reply: AIMessage | None = None
        self.streamed = False
        """Whether a chunk reached the sink."""
        self.error: BaseException | None = None

    def respond(self, context: AssembledContext, *, can_activate: bool) -> ResponderReply:
        # A plain model cannot call activate_topic, so ``can_activate`` is never used; weak
        # results still search the index before this call (the graph's fallback).
        messages = _paired_tool_messages(context_messages(context, self.system_prompt))
        try:
            if self.sink is not None:
                reply = self._stream(messages)
            else:
                reply = _as_reply(self.model.invoke(messages, self.config))
        except BaseException as error:
            self.error = error
            raise
        self.reply = reply.model_copy(update={"id": self.reply_id})
        answer: ResponderReply = {
            "text": text_of(self.reply),
            "activate_query": None,
            "message_id": self.reply_id,
        }
        if self.reply.tool_calls:
            answer["tool_calls"] = list(self.reply.tool_calls)
        return answer

    def _stream(self, messages: Sequence[BaseMessage]) -> AIMessage:
        assert self.sink is not None
        whole: AIMessageChunk | None = None
        for piece in self.model.stream(messages, self.config):
            chunk = _as_chunk(piece).model_copy(update={"id": self.reply_id})
            whole = chunk if whole is None else whole + chunk
            self.sink(chunk)
            self.streamed = True
        return _as_reply(whole) if whole is not None else AIMessage(content="")


def _input_messages(value: Any) -> list[BaseMessage]:
    """The messages of a call's input (see ``new_user_message`` for the accepted forms)."""
    if isinstance(value, str):
        return [HumanMessage(value)]
    if isinstance(value, PromptValue):
        return value.to_messages()
    if isinstance(value, Mapping) and "messages" in value:
        value = value["messages"]
    if isinstance(value, BaseMessage | Mapping | str):
        value = [value]
    if isinstance(value, Sequence):
        return list(convert_to_messages(value))
    raise ValueError(f"cannot read messages from {type(value).__name__}")


def new_user_message(value: Any) -> HumanMessage:
    """The new user message of a call's input.

    Args:
        value: A string, a message, a prompt value, a sequence of messages (or of
            ``(role, text)`` tuples / ``{"role", "content"}`` dicts), or a graph-style
            ``{"messages": [...]}`` dict; from a sequence the last user message is taken:
            earlier messages are already in memory.

    Raises:
        ValueError: The input holds no user message.
    """
    for message in reversed(_input_messages(value)):
        if isinstance(message, HumanMessage):
            return message
    raise ValueError("the input holds no user message")


def new_input_messages(value: Any) -> list[BaseMessage]:
    """What a call's input adds to the conversation.

    When the input ends with tool results (``ToolMessage``), those results, preceded by the
    reply that called the tools when the input holds it (the wrapper leaves that reply out
    again when memory already holds it); otherwise the last user message (``new_user_message``).

    Raises:
        ValueError: The input holds neither a user message nor tool results at its end.
    """
    messages = _input_messages(value)
    if messages and isinstance(messages[-1], ToolMessage):
        start = len(messages)
        while start > 0 and isinstance(messages[start - 1], ToolMessage):
            start -= 1
        before = messages[start - 1] if start > 0 else None
        if isinstance(before, AIMessage) and before.tool_calls:
            return messages[start - 1 :]
        return messages[start:]
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return [message]
    raise ValueError("the input holds no user message and ends with no tool result")


def _with_ids(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    return [
        m if m.id else m.model_copy(update={"id": f"msg-{uuid.uuid4().hex[:12]}"}) for m in messages
    ]


class TopicMemoryRunnable(Runnable[Any, AIMessage]):
    """A chat model (or any runnable) with topic memory in front of it.

    Example:
        >>> memory = TopicMemory("./memory")  # doctest: +SKIP
        >>> chat = TopicMemoryRunnable(ChatOpenAI(model="gpt-4o"), memory)  # doctest: +SKIP
        >>> config = {"configurable": {"thread_id": "alice"}}
        >>> chat.invoke("Where did we stay in Kyoto?", config)  # doctest: +SKIP
        >>> for chunk in chat.stream("And the year before?", config):  # doctest: +SKIP
        ...     print(chunk.content, end="")

    A reply with tool calls is recorded with them and returned as the model gave it; send the
    tool results next (the whole list, as an agent loop keeps it, or just the
    ``ToolMessage``s) and the model is called again with them in its window.

    Per-run settings: ``config["configurable"]["topic_memory"]`` (``RunSettings``, e.g.
    ``{"budget_tokens": 1200}``) changes the settings of that call only.

    Args:
        model: Called with the assembled messages (a system message, then the window's
            messages); may return a message or anything printable (e.g. a string).
        memory: Where the conversation lives.
        thread_id: The thread used when the call's config names none
            (``config["configurable"]["thread_id"]`` wins).
        system_prompt: The application's instructions, placed before the topic context.
    """

    def __init__(
        self,
        model: Runnable[Any, Any],
        memory: TopicMemory,
        *,
        thread_id: str = "default",
        system_prompt: str | None = None,
    ) -> None:
        self.model = model
        self.memory = memory
        self.thread_id = thread_id
        self.system_prompt = system_prompt

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> AIMessage:
        """Run one turn: record the new input, assemble, call the model, record the reply.

        A failing model degrades the turn (the graph stores an apology reply and a
        ``degraded`` event) instead of losing the recorded user message.

        Raises:
            ValueError: The input holds nothing new (see ``new_input_messages``).
            InputError: An invalid per-run setting (nothing is recorded).
        """
        responder = _RunnableResponder(self.model, self.system_prompt, config)
        stored = self._run(input, config, responder)
        if responder.reply is None:  # the graph answered itself (e.g. asked which topic)
            return stored
        return responder.reply

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[AIMessage]:
        """Run one turn like ``invoke``, yielding the model's chunks as it produces them.

        Every chunk is an ``AIMessageChunk`` carrying the id the reply is recorded under; their
        sum is the recorded reply. When the graph answers itself, or the model fails before its
        first chunk, the stored reply comes as one chunk. A model that fails after streaming
        part of its answer raises its error once the turn is recorded (with the apology).
        Stopping early still lets the turn finish (the whole reply is recorded).
        """
        pipe: queue.Queue[tuple[str, Any]] = queue.Queue()
        responder = _RunnableResponder(
            self.model,
            self.system_prompt,
            config,
            sink=lambda chunk: pipe.put(("chunk", chunk)),
        )

        def turn() -> None:
            try:
                pipe.put(("done", self._run(input, config, responder)))
            except BaseException as error:  # handed to the consumer
                pipe.put(("error", error))

        worker = threading.Thread(
            target=contextvars.copy_context().run, args=(turn,), name="topic-memory-turn"
        )
        worker.start()
        try:
            while True:
                kind, value = pipe.get()
                if kind == "chunk":
                    yield value
                elif kind == "error":
                    raise value
                else:
                    if responder.reply is None:
                        if responder.streamed and responder.error is not None:
                            raise responder.error
                        yield _as_chunk(value)
                    return
        finally:
            worker.join()

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[AIMessage]:
        """``stream`` for asyncio: the turn runs in a worker thread, chunks arrive as made."""
        chunks = cast(Generator[AIMessage, None, None], self.stream(input, config, **kwargs))
        end = object()
        try:
            while True:
                chunk = await run_in_executor(config, next, chunks, end)
                if chunk is end:
                    return
                yield cast(AIMessage, chunk)
        finally:
            await run_in_executor(config, chunks.close)

    def _run(
        self, input: Any, config: RunnableConfig | None, responder: _RunnableResponder
    ) -> AIMessage:
        """Record the input's new messages and run the turn; returns the stored reply."""
        new = _with_ids(new_input_messages(input))
        configurable = (config or {}).get("configurable") or {}
        thread_id = str(configurable.get("thread_id") or self.thread_id)
        base = self.memory.services.with_run_settings(configurable.get(RUN_SETTINGS_KEY) or {})
        # A fresh responder per call keeps concurrent calls' replies apart.
        services = replace(base, roles=replace(base.roles, responder=responder))
        with self.memory.writing(thread_id):
            new = self._not_held(thread_id, new)
            with self.memory.reading(thread_id):
                values = self.memory.state(thread_id)
                held = list(values.get("messages") or [])
                if continues_user_turn(values, new, [*held, *new]):
                    return self._tool_round(thread_id, values, new, services)
            result = self.memory.run_turn(
                thread_id, {"messages": new, "mode": "chat"}, services=services
            )
        return cast(AIMessage, result["messages"][-1])

    def _tool_round(
        self,
        thread_id: str,
        values: dict[str, Any],
        new: list[BaseMessage],
        services: TopicServices,
    ) -> AIMessage:
        """Answer tool results of the user turn under way, from its topic results.

        One memory turn per user turn: the results are recorded, the window is assembled
        again with them (no estimate, split or topic windows), the model answers (the graph's
        ``respond``: a failing model gets the apology) and the reply is recorded; the turn's
        bookkeeping ran with its first reply. Both locks of the thread are held.
        """
        info = ExecutionInfo(checkpoint_id="", checkpoint_ns="", task_id="", thread_id=thread_id)
        runtime = Runtime(context=TopicContext(services=services), execution_info=info)
        recorded = stamped(new, services.clock().isoformat())
        update = tool_round_update(values, recorded, runtime)
        state = {**values, **update, "messages": [*values.get("messages", []), *recorded]}
        answer = respond(cast(TopicState, state), runtime)
        reply = cast(AIMessage, answer["messages"][-1])
        update["messages"] = [*recorded, reply]
        update["total_messages"] = answer["total_messages"]
        update["last_seen_id"] = reply.id
        if answer.get("events"):
            update["events"] = answer["events"]
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        self.memory.graph.update_state(config, update, as_node="bookkeeping")
        return reply

    def _not_held(self, thread_id: str, messages: list[BaseMessage]) -> list[BaseMessage]:
        """Leave out a tool-calling reply (or tool result) the thread already holds."""
        if not any(isinstance(m, ToolMessage) for m in messages):
            return messages
        held = self.memory.state(thread_id).get("messages", [])
        held_ids = {m.id for m in held}
        held_calls = {call["id"] for m in held if isinstance(m, AIMessage) for call in m.tool_calls}
        kept: list[BaseMessage] = []
        for message in messages:
            if message.id in held_ids:
                continue
            if (
                isinstance(message, AIMessage)
                and {call["id"] for call in message.tool_calls} <= held_calls
            ):
                continue
            kept.append(message)
        if not kept:
            raise ValueError("the input holds nothing new: memory holds its tool results")
        return kept


def with_topic_memory(
    model: Runnable[Any, Any],
    memory: TopicMemory,
    *,
    thread_id: str = "default",
    system_prompt: str | None = None,
) -> TopicMemoryRunnable:
    """Wrap ``model`` so that every call goes through topic memory (see ``TopicMemoryRunnable``)."""
    return TopicMemoryRunnable(model, memory, thread_id=thread_id, system_prompt=system_prompt)
