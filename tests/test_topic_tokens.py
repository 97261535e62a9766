"""A topic's token total is counted once, then only for the messages appended since."""

from __future__ import annotations

from langgraph_topics.state.records import StoredMessage
from langgraph_topics.summaries.topic_tokens import topic_tokens


class CountingCounter:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, text: str) -> int:
        self.texts.append(text)
        return len(text.split())


def _said(n: int) -> StoredMessage:
    return {"id": f"m{n}", "role": "user", "content": f"word {n} more"}


class Store:
    """Any object stands for a store: totals are kept per store object."""


def test_only_appended_messages_are_counted_again() -> None:
    store, counter = Store(), CountingCounter()
    messages = [_said(n) for n in range(5)]
    assert topic_tokens(store, "t", messages, counter) == 15
    messages.extend(_said(n) for n in range(5, 7))
    assert topic_tokens(store, "t", messages, counter) == 21
    assert len(counter.texts) == 7  # each message counted once
    assert topic_tokens(Store(), "t", messages[:2], counter) == 6  # another store: its own


def test_a_shorter_view_of_the_topic_is_counted_afresh() -> None:
    store, counter = Store(), CountingCounter()
    topic_tokens(store, "t", [_said(n) for n in range(4)], counter)
    assert topic_tokens(store, "t", [_said(9)], counter) == 3
