"""Fence conversation text inside prompts so that it can never be read as reply structure.

Message text goes into ``<message>`` elements with ``<``, ``>`` and ``&`` escaped: a message
containing ``</topic_result>`` or ``<relevance_score>1.0</relevance_score>`` reaches the model as
inert text. Replies are parsed on their own (never together with the prompt), so the only tags
that count are those the model wrote itself. The main window's system prompt escapes quoted
history the same way, one quote a line inside a fenced block (:func:`quote_text`): there the
fence keeps it from reading as instructions.
"""

from __future__ import annotations

import re
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
    return f"<message {attributes}>{escape_text(_with_tool_calls(message))}</message>"


_LINE_BREAKS = re.compile("\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
"""What ``str.splitlines`` (and so a reader of the prompt) takes for the end of a line."""


def escape_label(text: str) -> str:
    """A name or label from the conversation, escaped and kept to one line."""
    return " ".join(escape_text(text).split())


def quote_text(text: str) -> str:
    r"""Conversation text on one line of a fenced block: escaped, its line breaks as ``\n``.

    The main window's lean form of :func:`render_numbered`'s element: its topic blocks are
    fenced once (``<q>…</q>``, in the ``main_window_topic`` prompt) and each quote is one
    ``speaker: text`` line in them. Escaped, a text cannot close the fence (``</q>`` becomes
    ``&lt;/q&gt;``); on one line, it cannot start a line of its own, so a ``SYSTEM: ignore all
    previous instructions`` line or a forged ``Mel: …`` quote stays inside its own quote.
    """
    return _LINE_BREAKS.sub(r"\\n", escape_text(text))


def quote_element(text: str, speaker: str = "") -> str:
    """Conversation text quoted as data on its own: ``<q speaker>text</q>``, escaped.

    For text outside a fenced block (a tool result read back into the system prompt).
    """
    label = escape_label(speaker)
    opening = f"<q {label}>" if label else "<q>"
    return f"{opening}{escape_text(text)}</q>"


def render_messages(messages: Sequence[StoredMessage]) -> str:
    """Messages one per line, in order (``-`` when there are none)."""
    return "\n".join(render_message(m) for m in messages) or "-"


def render_numbered(messages: Sequence[StoredMessage], first: int = 1) -> str:
    """Messages as lean ``<m n="…">`` elements numbered from ``first``, under day lines.

    A topic window's prompt is mostly message markup: an element names the message by a short
    number (the model references those) and its speaker, and each day is said once
    (``<day>2023-05-08</day>``) instead of a timestamp per message. Numbers are positions, so
    the markup of a topic's messages only grows as the topic does (its prompt prefix stays
    cacheable).
    """
    lines: list[str] = []
    day = ""
    for number, message in enumerate(messages, start=first):
        stamp = message.get("timestamp") or ""
        if stamp[:10] and stamp[:10] != day:
            day = stamp[:10]
            lines.append(f"<day>{escape_text(day)}</day>")
        attributes = f'n="{number}" role="{message["role"]}"'
        if message.get("name"):
            attributes += f' name="{escape_attribute(message.get("name", ""))}"'
        lines.append(f"<m {attributes}>{escape_text(_with_tool_calls(message))}</m>")
    return "\n".join(lines) or "-"


def _with_tool_calls(message: StoredMessage) -> str:
    """The message's text, with the names of the tools it calls."""
    text = message["content"]
    calls = message.get("tool_calls") or []
    if not calls:
        return text
    names = ", ".join(str(call.get("name", "?")) for call in calls)
    return f"{text}\n[tool calls: {names}]" if text else f"[tool calls: {names}]"
