"""The prompt language of one role call."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from langgraph_topics.prompts.language import detect_language
from langgraph_topics.state.records import StoredMessage

RECENT_FOR_LANGUAGE = 10
"""How many of the newest messages decide the language (the conversation may switch)."""


def call_language(preference: str, messages: Sequence[StoredMessage], *extra: str) -> str:
    """``zh`` or ``en``: the setting when it is fixed, else detected from the newest messages."""
    texts: Iterable[str] = [*(m["content"] for m in messages[-RECENT_FOR_LANGUAGE:]), *extra]
    return detect_language(texts, preference)
