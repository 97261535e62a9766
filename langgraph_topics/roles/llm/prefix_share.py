"""How much of a topic window's prompt repeats the start of that topic's previous prompt.

Providers cache prompt prefixes (seed 000 §12): a topic window prompt is laid out system prompt,
then the topic's split messages (append-only), then the unsplit messages, so consecutive calls
for one topic should share almost everything but the tail. This tracker measures it.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict


class PrefixTracker:
    """The previous prompt of each (thread, topic), kept for the most recent topics only.

    Args:
        max_topics: How many prompts are remembered (least recently used ones are forgotten).
    """

    def __init__(self, max_topics: int = 256) -> None:
        self.max_topics = max_topics
        self._previous: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._lock = threading.Lock()

    def share(self, key: tuple[str, str], prompt: str) -> float | None:
        """Share of ``prompt`` that is a prefix of the key's previous prompt, then remember it.

        ``None`` for the key's first prompt (nothing to compare with).
        """
        with self._lock:
            previous = self._previous.pop(key, None)
            self._previous[key] = prompt
            while len(self._previous) > self.max_topics:
                self._previous.popitem(last=False)
        if previous is None or not prompt:
            return None
        common = len(os.path.commonprefix([previous, prompt]))
        return round(common / len(prompt), 4)
