"""The topic windows' view of whole topics, kept between turns while a topic only grows.

Every turn each active topic window shows its whole topic as the main window would (large
tool results as references, ``windowed_messages``). A topic of 10,000 messages cost that many
Python steps per window and per turn, the largest cost of a turn that grew with history. A
topic between two turns is the same list or the same list with messages appended: the view of
the part already seen is reused and only the new messages are looked at.

Reuse is decided by value: the cached messages must equal the first ones of the topic now
(compared in C, and the store hands out the same cached records, so it is mostly identity),
so another store, another branch or a rewritten topic never gets a stale view.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence

from langgraph_topics.state.records import StoredMessage

ENTRIES = 256
"""Topics whose views are kept (a few threads' active topics); the oldest goes first."""

View = Callable[[Sequence[StoredMessage]], list[StoredMessage]]


class TopicViews:
    """Views of topics by key, extended when a topic grew, computed again otherwise."""

    def __init__(self, entries: int = ENTRIES) -> None:
        self.entries = entries
        self._views: OrderedDict[Hashable, tuple[list[StoredMessage], list[StoredMessage]]]
        self._views = OrderedDict()
        self._lock = threading.Lock()

    def view(
        self, key: Hashable, messages: Sequence[StoredMessage], render: View
    ) -> list[StoredMessage]:
        """``render(messages)``, reusing the view of a prefix rendered under ``key`` before.

        Args:
            key: What else the view depends on (thread, topic, policy, language, prompts).
            messages: The topic's messages now.
            render: Renders a run of messages; a message's view must depend on it alone.

        Returns:
            A fresh list (the caller may keep or change it).
        """
        current = list(messages)
        with self._lock:
            cached = self._views.get(key)
            if cached is not None:
                self._views.move_to_end(key)
        shown: list[StoredMessage]
        if cached is not None and _starts_with(current, cached[0]):
            seen, seen_view = cached
            shown = seen_view + render(current[len(seen) :])
        else:
            shown = render(current)
        with self._lock:
            self._views[key] = (current, shown)
            self._views.move_to_end(key)
            while len(self._views) > self.entries:
                self._views.popitem(last=False)
        return list(shown)


def _starts_with(messages: list[StoredMessage], prefix: list[StoredMessage]) -> bool:
    count = len(prefix)
    if count == 0 or count > len(messages):
        return False
    # The ends first: a topic read again from its file holds new records, so one look at
    # them saves comparing every message by value.
    if messages[0] is not prefix[0] or messages[count - 1] is not prefix[count - 1]:
        return False
    return messages[:count] == prefix
