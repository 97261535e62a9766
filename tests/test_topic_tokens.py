"""A topic's token total is counted once, then only for the messages appended since.

Also across processes: a store on files keeps the totals beside its topics."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores import JsonlTopicStore
from langgraph_topics.stores.overlay import OverlayTopicStore
from langgraph_topics.summaries.topic_tokens import (
    _ON_FILES,
    SAVE_AFTER_MESSAGES,
    TOTALS_FILE,
    topic_tokens,
)
from langgraph_topics.tokens import default_token_counter
from langgraph_topics.tokens.counting import _NAMED


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


def _store(tmp_path: Path, topic_messages: list[StoredMessage]) -> tuple[JsonlTopicStore, str]:
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("t", "")["id"]
    store.append(topic, topic_messages)
    return store, topic


def test_a_reopened_thread_does_not_count_its_topics_again(tmp_path: Path) -> None:
    counter = default_token_counter()
    messages = [_said(n) for n in range(SAVE_AFTER_MESSAGES + 5)]
    store, topic = _store(tmp_path, messages)
    total = topic_tokens(store, topic, store.messages(topic), counter)
    assert json.loads((tmp_path / TOTALS_FILE).read_text())["totals"]
    _ON_FILES.clear()  # a new process: only the file remembers
    counted: list[str] = []

    def counting(text: str) -> int:
        counted.append(text)
        return counter(text)

    _NAMED[counting] = _NAMED[counter]
    try:
        reopened = JsonlTopicStore(tmp_path)
        reopened.append(topic, [_said(-1)])
        now = reopened.messages(topic)
        assert topic_tokens(reopened, topic, now, counting) == total + counter(now[-1]["content"])
        assert counted == [now[-1]["content"]]  # only the message appended since
        # A dry run reads through to the same totals.
        assert topic_tokens(OverlayTopicStore(reopened), topic, now, counting) > total
        assert len(counted) == 1
    finally:
        del _NAMED[counting]


def test_a_total_that_no_longer_matches_its_topic_is_counted_again(tmp_path: Path) -> None:
    counter = CountingCounter()
    store, topic = _store(tmp_path, [_said(n) for n in range(4)])
    assert topic_tokens(store, topic, store.messages(topic), counter) == 12
    other = [_said(n) for n in range(3)] + [{"id": "m3", "role": "user", "content": "a b"}]
    assert topic_tokens(store, topic, other, counter) == 11  # same ids, another last text


@pytest.mark.parametrize(
    "content",
    [b"not json", b'{"format": "something else", "version": 1, "totals": {}}', b'{"format":'],
)
def test_a_damaged_totals_file_costs_a_count_and_a_warning(
    tmp_path: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / TOTALS_FILE).write_bytes(content)
    _ON_FILES.pop(tmp_path / TOTALS_FILE, None)
    store, topic = _store(tmp_path, [_said(n) for n in range(3)])
    with caplog.at_level(logging.WARNING):
        assert topic_tokens(store, topic, store.messages(topic), CountingCounter()) == 9
    assert TOTALS_FILE in caplog.text
