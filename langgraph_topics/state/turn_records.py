"""The working set as stored records, converted once per turn instead of once per step.

The estimate, the fan-out and the assembler each read the working set as records, and within
a turn they are handed the same LangChain message objects (the state's list, or a list of its
messages): about 70 messages converted three times a turn. A record is kept by the message
object it came from, holding that object so that its ``id()`` cannot be reused, and the
memo is emptied when a turn starts (:func:`new_turn`, called by the estimate), so that a
message object changed in place between turns (an application's own input object) is
converted again. The records are shared: their readers never change them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from langchain_core.messages import BaseMessage

from langgraph_topics.state.messages import to_stored
from langgraph_topics.state.records import StoredMessage

LIMIT = 4096
"""Records kept at most: several threads' working sets (a turn's is under the split size)."""

_records: dict[int, tuple[BaseMessage, StoredMessage]] = {}
_lock = threading.Lock()


def turn_records(messages: Iterable[BaseMessage]) -> list[StoredMessage]:
    """:func:`~langgraph_topics.state.messages.to_stored` of each message, shared for the turn.

    Raises:
        ValueError: A message without an id.
    """
    given = list(messages)
    with _lock:
        kept = [_records.get(id(message)) for message in given]
    out: list[StoredMessage] = []
    made: list[tuple[BaseMessage, StoredMessage]] = []
    for message, found in zip(given, kept, strict=True):
        if found is not None and found[0] is message:
            out.append(found[1])
        else:
            record = to_stored(message)
            made.append((message, record))
            out.append(record)
    if made:
        with _lock:
            if len(_records) + len(made) > LIMIT:
                _records.clear()
            _records.update((id(message), (message, record)) for message, record in made)
    return out


def new_turn() -> None:
    """Forget every kept record: a turn starts."""
    with _lock:
        _records.clear()
