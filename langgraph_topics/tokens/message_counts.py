"""Each message's token count, counted once while one window is assembled.

The assembler needs a message's tokens up to four times (the recent messages' fit, their
total, the unsplit candidates' costs, the window's total and its sections): about 250 calls
of :func:`message_tokens` a turn at 70 working messages, each a Python call with its own
lookups. The counts are kept by message object for one assembly only: the records are not
changed while it runs (a shortened message is a new record), and holding the object keeps its
``id()`` from being reused.
"""

from __future__ import annotations

from langgraph_topics.state.records import StoredMessage
from langgraph_topics.tokens.counting import TokenCounter, message_tokens


class MessageTokens:
    """:func:`message_tokens` of a message, remembered for the message object."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._counts: dict[int, tuple[StoredMessage, int]] = {}

    def __call__(self, message: StoredMessage) -> int:
        """The message's tokens (counted the first time it is asked for)."""
        found = self._counts.get(id(message))
        if found is not None and found[0] is message:
            return found[1]
        tokens = message_tokens(message, self.counter)
        self._counts[id(message)] = (message, tokens)
        return tokens
