"""The topic windows' view of whole topics, kept between turns while a topic only grows.

Every turn each active topic window shows its whole topic as the main window would (large
tool results as references, ``windowed_messages``). A topic of 10,000 messages cost that many
Python steps per window and per turn, the largest cost of a turn that grew with history. A
topic between two turns is the same list or the same list with messages appended: the view of
the part already seen is reused and only the new messages are looked at.

Reuse is decided by value: the cached messages must equal the first ones of the topic now
(compared in C, and the store hands out the same cached records, so it is mostly identity),
so another store, another branch or a rewritten topic never gets a stale view.

A store that hands out views of its own lists (``stores/message_views``) is cheaper still:
the same list, no shorter, is the same topic grown, so nothing is copied or compared, and a
topic without large tool results (its view is its messages) keeps no list of its own at all.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence

from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.message_views import MessagesView

ENTRIES = 256
"""Topics whose views are kept (a few threads' active topics); the oldest goes first."""

View = Callable[[Sequence[StoredMessage]], list[StoredMessage]]


class TopicViews:
    """Views of topics by key, extended when a topic grew, computed again otherwise."""

    def __init__(self, entries: int = ENTRIES) -> None:
        self.entries = entries
        self._views: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def view(
        self, key: Hashable, messages: Sequence[StoredMessage], render: View
    ) -> Sequence[StoredMessage]:
        """``render(messages)``, reusing the view of a prefix rendered under ``key`` before.

        Args:
            key: What else the view depends on (thread, topic, policy, language, prompts).
            messages: The topic's messages now.
            render: Renders a run of messages; a message's view must depend on it alone
                (one rendered message per message).

        Returns:
            For a :class:`MessagesView`, a view (never to be changed); otherwise a fresh list
            (the caller may keep or change it).
        """
        if isinstance(messages, MessagesView):
            return self._grown(key, messages, render)
        current = list(messages)
        with self._lock:
            cached = self._views.get(key)
            if cached is not None:
                self._views.move_to_end(key)
        shown: list[StoredMessage]
        if cached is not None and isinstance(cached[0], list) and _starts_with(current, cached[0]):
            seen, seen_view = cached
            assert seen_view is not None  # lists are always kept with their own view
            shown = seen_view + render(current[len(seen) :])
        else:
            shown = render(current)
        self._keep(key, (current, shown))
        return list(shown)

    def _grown(self, key: Hashable, messages: MessagesView, render: View) -> MessagesView:
        with self._lock:
            seen, shown = self._views.get(key, ([], None))
            if isinstance(seen, MessagesView) and seen.extends(messages):
                # An older snapshot of the list (a reader that started earlier): a prefix.
                self._views.move_to_end(key)
                return MessagesView(shown or messages.source, messages.length)
            if isinstance(seen, MessagesView) and messages.extends(seen):
                self._views.move_to_end(key)
                # Under the lock: two windows of one topic extend the same list once.
                shown = _extend(shown, seen, messages, render)
                if messages.length > seen.length:
                    self._views[key] = (messages, shown)
                return MessagesView(shown or messages.source, messages.length)
        fresh = render(messages)
        shown = None if _same_messages(fresh, messages) else fresh
        self._keep(key, (messages, shown))
        return MessagesView(shown or messages.source, messages.length)

    def _keep(self, key: Hashable, entry: _Entry) -> None:
        with self._lock:
            self._views[key] = entry
            self._views.move_to_end(key)
            while len(self._views) > self.entries:
                self._views.popitem(last=False)


_Entry = tuple[list[StoredMessage] | MessagesView, list[StoredMessage] | None]
"""The messages a view was rendered from, and the view (None: the messages themselves)."""


def _same_messages(shown: list[StoredMessage], messages: Sequence[StoredMessage]) -> bool:
    return len(shown) == len(messages) and all(map(operator.is_, shown, messages))


def _extend(
    shown: list[StoredMessage] | None, seen: MessagesView, now: MessagesView, render: View
) -> list[StoredMessage] | None:
    """The view of ``now`` (which extends ``seen``), from the view of ``seen``."""
    have = seen.length if shown is None else len(shown)
    if have >= now.length:
        return shown
    fresh = render(now.source[have : now.length])
    if shown is None:
        if _same_messages(fresh, now.source[have : now.length]):
            return None
        # The first large tool result: from now on the view is a list of its own.
        shown = now.source[:have]
    # Appended in place: views handed out earlier end at their own length.
    shown.extend(fresh)
    return shown


def _starts_with(messages: list[StoredMessage], prefix: list[StoredMessage]) -> bool:
    count = len(prefix)
    if count == 0 or count > len(messages):
        return False
    # The ends first: a topic read again from its file holds new records, so one look at
    # them saves comparing every message by value.
    if messages[0] is not prefix[0] or messages[count - 1] is not prefix[count - 1]:
        return False
    return messages[:count] == prefix
