"""Conversion between LangChain messages (the graph's ``messages``) and stored records."""

from __future__ import annotations

import json
from typing import Any, cast

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langgraph_topics.state.records import Role, StoredMessage

TIMESTAMP_KEY = "timestamp"
"""Key under ``additional_kwargs`` holding a message's ISO-8601 send time."""

_ROLE_OF_TYPE: dict[str, Role] = {
    "human": "user",
    "ai": "assistant",
    "tool": "tool",
    "system": "system",
}


def text_of(message: BaseMessage) -> str:
    """The text of a message, whether its content is a string or a list of content blocks."""
    content = message.content
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and isinstance(block.get("text"), str):
            parts.append(block["text"])
        else:
            parts.append(json.dumps(block, ensure_ascii=False, default=str))
    return "\n".join(parts)


def to_stored(message: BaseMessage) -> StoredMessage:
    """Record a LangChain message (it must have an id)."""
    if not message.id:
        raise ValueError("a message needs an id before it can be stored")
    record: StoredMessage = {
        "id": message.id,
        "role": _ROLE_OF_TYPE.get(message.type, "user"),
        "content": text_of(message),
    }
    if message.name:
        record["name"] = message.name
    timestamp = message.additional_kwargs.get(TIMESTAMP_KEY)
    if isinstance(timestamp, str):
        record["timestamp"] = timestamp
    if isinstance(message, AIMessage) and message.tool_calls:
        record["tool_calls"] = [dict(call) for call in message.tool_calls]
    if isinstance(message, ToolMessage):
        record["tool_call_id"] = message.tool_call_id
    return record


def to_langchain(record: StoredMessage) -> AnyMessage:
    """Rebuild the LangChain message of a stored record."""
    kwargs: dict[str, Any] = {"content": record["content"], "id": record["id"]}
    if "name" in record:
        kwargs["name"] = record["name"]
    if "timestamp" in record:
        kwargs["additional_kwargs"] = {TIMESTAMP_KEY: record["timestamp"]}
    role = record["role"]
    if role == "assistant":
        calls = cast(list[Any], record.get("tool_calls", []))
        return AIMessage(tool_calls=calls, **kwargs)
    if role == "tool":
        return ToolMessage(tool_call_id=record.get("tool_call_id", ""), **kwargs)
    if role == "system":
        return SystemMessage(**kwargs)
    return HumanMessage(**kwargs)
