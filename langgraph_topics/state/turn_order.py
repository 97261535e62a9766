"""The order strict chat templates want: a user message first, then user and assistant in turn.

Many served models (vLLM with Llama, Mistral or Gemma templates) refuse a request whose first
message after the system message is not the user's, or where two messages of one role follow
each other. The assembled window keeps whole exchanges (a user message with its replies and
tool exchanges) when ``Settings.alternating_roles`` asks for it; what cannot open the chat (a
reply before any question the window shows) is quoted in the system prompt instead, and
messages of one role that still follow each other are joined when the window is sent
(``integrations.messages.context_messages``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langgraph_topics.state.records import StoredMessage

Message = TypeVar("Message", bound=BaseMessage)


def unit_start(messages: Sequence[StoredMessage], start: int) -> int:
    """Where the exchange holding ``messages[start]`` begins: the user message opening it.

    ``start`` itself when it is a user message, or when no user message comes before it.
    """
    place = start
    while place > 0 and messages[place]["role"] != "user":
        place -= 1
    return place if messages[place]["role"] == "user" else start


def leading_replies(messages: Sequence[StoredMessage]) -> int:
    """How many messages come before the first user message (all of them without one)."""
    for place, message in enumerate(messages):
        if message["role"] == "user":
            return place
    return len(messages)


def joined_turns(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with user messages in a row, and replies in a row, each joined into one.

    A reply that calls tools keeps its place (its results must follow it); text-only replies
    before it are joined into it. Messages with non-text content are left as they are.
    """
    joined: list[Message] = []
    for message in messages:
        last = joined[-1] if joined else None
        if last is not None and _joinable(last, message):
            text = f"{last.content}\n\n{message.content}"
            update: dict[str, object] = {"content": text}
            if isinstance(message, AIMessage) and message.tool_calls:
                update["tool_calls"] = message.tool_calls
            joined[-1] = last.model_copy(update=update)
            continue
        joined.append(message)
    return joined


def _joinable(first: BaseMessage, second: BaseMessage) -> bool:
    if not isinstance(first.content, str) or not isinstance(second.content, str):
        return False
    if isinstance(first, HumanMessage) and isinstance(second, HumanMessage):
        return True
    return isinstance(first, AIMessage) and isinstance(second, AIMessage) and not first.tool_calls
