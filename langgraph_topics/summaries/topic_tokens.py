"""How many tokens a topic's messages hold, counted once and then only for what was appended.

A card's ``tokens_saved`` compares a summary with the messages it stands for: on every turn,
for every active topic. Counting a long topic's every message each time made a turn grow with
history; topics only grow at their end, so the count only needs their new messages.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from weakref import WeakKeyDictionary

from langgraph_topics.state.records import StoredMessage
from langgraph_topics.tokens import TokenCounter

_TOTALS: WeakKeyDictionary[object, dict[str, tuple[int, int]]] = WeakKeyDictionary()
"""Per store object, per topic: (messages counted, their tokens)."""
_LOCK = threading.Lock()


def topic_tokens(
    store: object, topic_id: str, messages: Sequence[StoredMessage], count: TokenCounter
) -> int:
    """The tokens of ``messages`` (a topic of ``store``, in order, as it reads now)."""
    with _LOCK:
        known = _TOTALS.setdefault(store, {}).get(topic_id, (0, 0))
    counted, total = known if known[0] <= len(messages) else (0, 0)
    total += sum(count(m["content"]) for m in messages[counted:])
    with _LOCK:
        _TOTALS[store][topic_id] = (len(messages), total)
    return total
