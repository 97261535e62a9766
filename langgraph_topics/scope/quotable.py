"""Which messages of another thread may be quoted in this one (user scope; invariant 8)."""

from __future__ import annotations

from langgraph_topics.state.records import StoredMessage


def quotable(message: StoredMessage) -> bool:
    """A user or assistant message with text and no tool call.

    A tool call and its result are quoted together or not at all; another thread's are never
    quoted, so a quote is never half of one.
    """
    return (
        message["role"] in ("user", "assistant")
        and not message.get("tool_calls")
        and bool(message["content"].strip())
    )
