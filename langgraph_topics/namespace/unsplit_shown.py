"""The unsplit messages as every topic window of one fan-out reads them, worked out once.

The fan-out hands each of a turn's topic windows the same list of unsplit messages, and each
window worked out the same things from it: the prompt language, the window's view of the list
(large tool results as references, ``windowed_messages``) and the set of its ids. They are kept
here for the last few lists handed out, by the list object itself (the entry holds it, so its
``id()`` is not reused) and by the records it holds: the records are shared and never changed,
and a list changed in place since is seen (its records are compared by identity, in C) and
worked out again.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from langgraph_topics.namespace.policy import NamespacePolicy
from langgraph_topics.namespace.window import windowed_messages
from langgraph_topics.prompts.language import detect_language
from langgraph_topics.settings import Settings
from langgraph_topics.state.records import StoredMessage

ENTRIES = 8
"""Lists kept: one per fan-out, a few threads' turns at once."""

LANGUAGE_SAMPLE = 10
"""The newest messages the language is detected from."""


@dataclass(frozen=True)
class ShownUnsplit:
    """What every topic window of a fan-out reads alike from its unsplit messages."""

    language: str
    policy: NamespacePolicy
    shown: tuple[StoredMessage, ...]
    """The messages as the window shows them (shared records: copy into a list to hand out)."""
    ids: frozenset[str]


@dataclass(frozen=True)
class _Entry:
    unsplit: Sequence[StoredMessage]
    records: tuple[StoredMessage, ...]
    settings: Settings
    value: ShownUnsplit


_entries: OrderedDict[tuple[int, int], _Entry] = OrderedDict()
_lock = threading.Lock()


def shown_unsplit(unsplit: Sequence[StoredMessage], settings: Settings) -> ShownUnsplit:
    """The language, window view and ids of ``unsplit`` under ``settings``, shared by a turn."""
    key = (id(unsplit), id(settings))
    # Worked out under the lock: a turn's windows start together, and the first one's work
    # is what the others wait for (waiting costs them no CPU; working it out again would).
    with _lock:
        entry = _entries.get(key)
        if entry is not None and _same(entry, unsplit, settings):
            _entries.move_to_end(key)
            return entry.value
        records = tuple(unsplit)
        value = _worked_out(records, settings)
        _entries[key] = _Entry(unsplit, records, settings, value)
        _entries.move_to_end(key)
        while len(_entries) > ENTRIES:
            _entries.popitem(last=False)
        return value


def _worked_out(records: tuple[StoredMessage, ...], settings: Settings) -> ShownUnsplit:
    language = detect_language(
        (m["content"] for m in records[-LANGUAGE_SAMPLE:]), settings.language
    )
    policy = NamespacePolicy.of(settings)
    shown = windowed_messages(
        records,
        policy,
        language,
        settings.prompt_dir,
        preview_chars=settings.namespace_preview_chars,
    )
    return ShownUnsplit(language, policy, tuple(shown), frozenset(m["id"] for m in records))


def _same(entry: _Entry, unsplit: Sequence[StoredMessage], settings: Settings) -> bool:
    """Whether ``entry`` was worked out from this very list, still holding the same records."""
    return (
        entry.unsplit is unsplit
        and entry.settings is settings
        and len(unsplit) == len(entry.records)
        and all(map(operator.is_, unsplit, entry.records))
    )
