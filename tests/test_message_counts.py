"""Tokens of a message are counted once per assembly, and anew for any other record."""

from __future__ import annotations

from langgraph_topics.retrieval.evidence import Positions
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.tokens import message_tokens
from langgraph_topics.tokens.message_counts import MessageTokens


def _counting() -> tuple[list[str], MessageTokens]:
    seen: list[str] = []

    def counter(text: str) -> int:
        seen.append(text)
        return len(text.split())

    return seen, MessageTokens(counter)


def test_a_message_is_counted_once_and_as_message_tokens_counts_it() -> None:
    seen, tokens = _counting()
    message: StoredMessage = {"id": "m1", "role": "user", "content": "three little words"}
    assert tokens(message) == message_tokens(message, tokens.counter) == 7
    seen.clear()
    assert tokens(message) == 7
    assert seen == []


def test_an_edited_or_shortened_record_is_counted_again() -> None:
    seen, tokens = _counting()
    message: StoredMessage = {"id": "m1", "role": "user", "content": "three little words"}
    tokens(message)
    # The assembler shortens a message into a new record with the same id: its own count.
    shortened: StoredMessage = {**message, "content": "three"}
    assert tokens(shortened) == 5
    called: StoredMessage = {
        **message,
        "tool_calls": [{"id": "c1", "name": "search", "args": {"q": "x"}}],
    }
    assert tokens(called) == message_tokens(called, tokens.counter)
    assert tokens(message) == 7


def test_positions_get_answers_as_the_mapping_does() -> None:
    positions = Positions({"a": 0, "b": 1, "late": 5}, 2, {"u": 2})
    for key in ["a", "b", "u", "late", "unknown"]:
        assert positions.get(key) == (positions[key] if key in positions else None)
        assert positions.get(key, -1) == (positions[key] if key in positions else -1)
