"""Fence conversation text inside prompts so that it can never be read as reply structure.

Message text goes into ``<message>`` elements with ``<``, ``>`` and ``&`` escaped: a message
containing ``</topic_result>`` or ``<relevance_score>1.0</relevance_score>`` reaches the model as
inert text. Replies are parsed on their own (never together with the prompt), so the only tags
that count are those the model wrote itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from langgraph_topics.state.records import StoredMessage


def escape_text(text: str) -> str:
    """Escape ``&``, ``<`` and ``>`` (quotes stay readable in element text)."""
    return escape(text, quote=False)


def escape_attribute(value: str) -> str:
    """Escape a value for a double-quoted attribute."""
    return escape(value, quote=True)


def render_message(message: StoredMessage) -> str:
    """One message as an escaped ``<message>`` element."""
    attributes = f'id="{escape_attribute(message["id"])}" role="{message["role"]}"'
    if message.get("timestamp"):
        attributes += f' time="{escape_attribute(message.get("timestamp", ""))}"'
    if message.get("name"):
        attributes += f' name="{escape_attribute(message.get("name", ""))}"'
    text = message["content"]
    calls = message.get("tool_calls") or []
    if calls:
        names = ", ".join(str(call.get("name", "?")) for call in calls)
        text = f"{text}\n[tool calls: {names}]" if text else f"[tool calls: {names}]"
    return f"<message {attributes}>{escape_text(text)}</message>"


def render_messages(messages: Sequence[StoredMessage]) -> str:
    """Messages one per line, in order (``-`` when there are none)."""
    return "\n".join(render_message(m) for m in messages) or "-"
