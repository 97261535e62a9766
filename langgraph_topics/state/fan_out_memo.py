"""Values every topic window of one fan-out works out alike from the list it was handed.

The fan-out hands each of a turn's topic windows the same list of working-set records, and each
window worked out the same things from it (its window view, the turn's evidence). A memo keeps
them for the last few lists handed out, by the list object itself (the entry holds it, so its
``id()`` is not reused) and by the records it holds: the records are shared and never changed,
and a list changed in place since is seen (its records are compared by identity, in C) and
worked out again. A new turn, or a second fan-out after an activation, hands out a new list.

Values are worked out under a lock of their list: a turn's windows start together, and the
first one's work is what the others wait for (waiting costs them no CPU; working it out again
would). Another list (another thread's turn) does not wait for it.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from langgraph_topics.state.records import StoredMessage

ENTRIES = 8
"""Lists kept: one per fan-out, a few threads' turns at once."""

Value = TypeVar("Value")


@dataclass(frozen=True)
class _Entry(Generic[Value]):
    given: Sequence[StoredMessage]
    records: tuple[StoredMessage, ...]
    made_for: tuple[object, ...]
    version: Hashable
    value: Value


class FanOutMemo(Generic[Value]):
    """Values worked out from a list of records and what else they depend on."""

    def __init__(self, entries: int = ENTRIES) -> None:
        self.entries = entries
        self._entries: OrderedDict[tuple[int, ...], _Entry[Value]] = OrderedDict()
        self._lock = threading.Lock()
        """Guards the two dicts only: values are worked out under their list's own lock."""
        self._working: dict[tuple[int, ...], threading.Lock] = {}

    def get(
        self,
        given: Sequence[StoredMessage],
        made_for: tuple[object, ...],
        version: Hashable,
        work: Callable[[tuple[StoredMessage, ...]], Value],
    ) -> Value:
        """``work(records of given)``, or what it gave for this very list, objects and version.

        Args:
            given: The list the fan-out handed out.
            made_for: The objects the value depends on (settings, stores), compared by identity
                (and held, so that their ``id()`` is not reused).
            version: Plain values it depends on as well, compared by equality.
            work: Works the value out from the list's records.
        """
        key = (id(given), *map(id, made_for))
        found = self._found(key, given, made_for, version)
        if found is not None:
            return found[0]
        with self._lock:
            working = self._working.setdefault(key, threading.Lock())
        # Only the windows of this list wait for its first window's work: another thread's
        # turn (another list) works out its own meanwhile.
        with working:
            try:
                found = self._found(key, given, made_for, version)
                if found is not None:
                    return found[0]
                records = tuple(given)
                value = work(records)
                with self._lock:
                    self._entries[key] = _Entry(given, records, made_for, version, value)
                    self._entries.move_to_end(key)
                    while len(self._entries) > self.entries:
                        self._entries.popitem(last=False)
                return value
            finally:
                with self._lock:
                    if self._working.get(key) is working:
                        del self._working[key]

    def _found(
        self,
        key: tuple[int, ...],
        given: Sequence[StoredMessage],
        made_for: tuple[object, ...],
        version: Hashable,
    ) -> tuple[Value] | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or not _same(entry, given, made_for, version):
                return None
            self._entries.move_to_end(key)
            return (entry.value,)

    def __len__(self) -> int:
        return len(self._entries)


def _same(
    entry: _Entry[Value],
    given: Sequence[StoredMessage],
    made_for: tuple[object, ...],
    version: Hashable,
) -> bool:
    """Whether ``entry`` was worked out from this very list, still holding the same records."""
    return (
        entry.given is given
        and all(map(operator.is_, made_for, entry.made_for))
        and entry.version == version
        and len(given) == len(entry.records)
        and all(map(operator.is_, given, entry.records))
    )
