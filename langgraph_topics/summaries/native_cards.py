"""Native cards of topic results, kept while their topic and their quotes stay the same.

A topic result whose back end wrote no card gets a native one (``topic_cards.result_card``),
every turn, for every active topic. That card follows from the topic's messages (their token
total), the quoted messages, the summary and the topic's name alone. Between two splits a topic
is the same, and a back end mostly quotes the same messages in the same words: the card came out
the same turn after turn, each time for the price of reading the quotes back from the store,
counting tokens and copying the facts.

Cards are kept by the topic's messages as the store hands them out (``stores/message_views``:
the same list, no longer, is the same topic; a merged or divided topic gets a new list), one
per topic, with the quotes, summary, name and token counter they were made for. The entry holds
the list, so its ``id()`` is not reused while it is kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, cast

from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.message_views import MessagesView
from langgraph_topics.summaries.card import SummaryCard

ENTRIES = 256
"""Topics whose card is kept (a few threads' active topics); the oldest goes first."""


@dataclass(frozen=True)
class _Entry:
    source: list[StoredMessage]
    length: int
    made_for: Hashable
    card: SummaryCard


class NativeCards:
    """The last native card of each topic, handed out as copies."""

    def __init__(self, entries: int = ENTRIES) -> None:
        self.entries = entries
        self._cards: OrderedDict[int, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def card(
        self, topic: MessagesView, made_for: Hashable, make: Callable[[], SummaryCard]
    ) -> SummaryCard:
        """``make()``, or a copy of the card it made for this topic and ``made_for`` before.

        Args:
            topic: The topic's messages, as the store handed them out this turn.
            made_for: Everything else the card depends on (quotes, summary, name, counter).
            make: Makes the card (the caller's to keep).
        """
        key = id(topic.source)
        with self._lock:
            entry = self._cards.get(key)
            if entry is not None:
                self._cards.move_to_end(key)
        if (
            entry is not None
            and entry.source is topic.source
            and entry.length == topic.length
            and entry.made_for == made_for
        ):
            return copy_card(entry.card)
        card = make()
        with self._lock:
            self._cards[key] = _Entry(topic.source, topic.length, made_for, copy_card(card))
            self._cards.move_to_end(key)
            while len(self._cards) > self.entries:
                self._cards.popitem(last=False)
        return card


def copy_card(card: SummaryCard) -> SummaryCard:
    """A copy whose facts (and their id lists) the caller may change: kept cards are shared."""
    copied = cast(dict[str, Any], dict(card))
    for kind in _FACT_LISTS:
        copied[kind] = [{**fact, "message_ids": list(fact["message_ids"])} for fact in copied[kind]]
    return cast(SummaryCard, copied)


_FACT_LISTS = ("topics", "decisions", "unresolved", "entities")
