"""Put topic memory in front of any chat model or runnable.

Per call the wrapper runs one full turn of the topic-memory graph for the thread: it records the
user message, assembles the topic context (topic results, unsplit and recent messages), calls the
wrapped model with the assembled messages in place of the graph's own responder, records the
reply and updates the topic scores. The caller sends only the new message; memory has the rest.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, convert_to_messages
from langchain_core.prompt_values import PromptValue
from langchain_core.runnables import Runnable, RunnableConfig

from langgraph_topics.integrations.messages import context_messages
from langgraph_topics.memory import TopicMemory
from langgraph_topics.roles.protocols import ResponderReply
from langgraph_topics.state.messages import text_of
from langgraph_topics.state.records import AssembledContext


class _RunnableResponder:
    """The responder role served by an arbitrary runnable (one instance per call)."""

    def __init__(
        self, model: Runnable[Any, Any], system_prompt: str | None, config: RunnableConfig | None
    ) -> None:
        self.model = model
        self.system_prompt = system_prompt
        self.config = config
        self.reply: AIMessage | None = None

    def respond(self, context: AssembledContext, *, can_activate: bool) -> ResponderReply:
        # A plain model cannot call activate_topic, so ``can_activate`` is never used; weak
        # results still search the index before this call (the graph's fallback).
        output = self.model.invoke(context_messages(context, self.system_prompt), self.config)
        if isinstance(output, AIMessage):
            self.reply = output
        elif isinstance(output, BaseMessage):
            self.reply = AIMessage(content=output.content)
        else:
            self.reply = AIMessage(content=str(output))
        return {"text": text_of(self.reply), "activate_query": None}


def new_user_message(value: Any) -> HumanMessage:
    """The new user message of a call's input.

    Args:
        value: A string, a message, a prompt value, or a sequence of messages (or of
            ``(role, text)`` tuples / ``{"role", "content"}`` dicts); from a sequence the last
            user message is taken: earlier messages are already in memory.

    Raises:
        ValueError: The input holds no user message.
    """
    if isinstance(value, str):
        return HumanMessage(value)
    if isinstance(value, PromptValue):
        value = value.to_messages()
    if isinstance(value, BaseMessage | Mapping):
        value = [value]
    if isinstance(value, Sequence):
        for message in reversed(convert_to_messages(value)):
            if isinstance(message, HumanMessage):
                return message
    raise ValueError("the input holds no user message")


class TopicMemoryRunnable(Runnable[Any, AIMessage]):
    """A chat model (or any runnable) with topic memory in front of it.

    Example:
        >>> memory = TopicMemory("./memory")  # doctest: +SKIP
        >>> chat = TopicMemoryRunnable(ChatOpenAI(model="gpt-4o"), memory)  # doctest: +SKIP
        >>> config = {"configurable": {"thread_id": "alice"}}
        >>> chat.invoke("Where did we stay in Kyoto?", config)  # doctest: +SKIP

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
        """Run one turn: record the user message, assemble, call the model, record the reply.

        A failing model degrades the turn (the graph stores an apology reply and a
        ``degraded`` event) instead of losing the recorded user message.
        """
        message = new_user_message(input)
        if not message.id:
            message = message.model_copy(update={"id": f"msg-{uuid.uuid4().hex[:12]}"})
        configurable = (config or {}).get("configurable", {})
        thread_id = str(configurable.get("thread_id") or self.thread_id)
        # A fresh responder per call keeps concurrent calls' replies apart.
        responder = _RunnableResponder(self.model, self.system_prompt, config)
        base = self.memory.services
        services = replace(base, roles=replace(base.roles, responder=responder))
        result = self.memory.run_turn(
            thread_id, {"messages": [message], "mode": "chat"}, services=services
        )
        stored = result["messages"][-1]
        if responder.reply is None:  # the graph answered itself (e.g. asked which topic)
            return cast(AIMessage, stored)
        return responder.reply.model_copy(update={"id": stored.id})


def with_topic_memory(
    model: Runnable[Any, Any],
    memory: TopicMemory,
    *,
    thread_id: str = "default",
    system_prompt: str | None = None,
) -> TopicMemoryRunnable:
    """Wrap ``model`` so that every call goes through topic memory (see ``TopicMemoryRunnable``)."""
    return TopicMemoryRunnable(model, memory, thread_id=thread_id, system_prompt=system_prompt)
