"""How many tokens a topic's messages hold, counted once and then only for what was appended.

A card's ``tokens_saved`` compares a summary with the messages it stands for: on every turn,
for every active topic. Counting a long topic's every message each time made a turn grow with
history; topics only grow at their end, so the count only needs their new messages.

Totals are kept per thread: per base store, under any dry-run overlay (whose topics read as the
base's plus its own appends), so a context query does not count its active topics again. A
store on files also keeps them in ``token-totals.json`` beside its topic files, so reopening a
long thread does not either (at 100,000 messages, counting the ten active topics was a third of
the first query). The file is a cache: a total is used only for the messages it still matches
(how many, the last one's id and a checksum of its text); anything else is counted again.
"""

from __future__ import annotations

import json
import logging
import threading
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.durable import replace_durably
from langgraph_topics.stores.overlay import OverlayTopicStore
from langgraph_topics.stores.topic_store import JsonlTopicStore
from langgraph_topics.tokens import TokenCounter
from langgraph_topics.tokens.counting import counter_key

log = logging.getLogger(__name__)

TOTALS_FILE = "token-totals.json"
FORMAT = "langgraph-topics token totals"
VERSION = 1
SAVE_AFTER_MESSAGES = 2_000
"""Messages counted anew since the file was written before it is written again: reopening
saves the long counts, and an ordinary turn (a few messages per topic) writes nothing."""


@dataclass(frozen=True)
class _Total:
    count: int
    """How many of the topic's first messages were counted."""
    tokens: int
    last_id: str
    last_checksum: int

    def matches(self, messages: Sequence[StoredMessage]) -> bool:
        """Whether ``messages`` still begin with the messages this total counted."""
        if self.count == 0:
            return True
        if self.count > len(messages):
            return False
        last = messages[self.count - 1]
        return last["id"] == self.last_id and _checksum(last) == self.last_checksum


@dataclass
class _ThreadTotals:
    path: Path | None
    totals: dict[tuple[str, str], _Total] = field(default_factory=dict)
    """By (counter, topic id); counters without a lasting name go by ``id()``."""
    unsaved: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


_ON_FILES: dict[Path, _ThreadTotals] = {}
"""Stores on files, by totals file: a thread's branches and reopened stores share them (the
totals check themselves), and only one writer per file is in flight."""
_BY_STORE: WeakKeyDictionary[object, _ThreadTotals] = WeakKeyDictionary()
"""The totals of each base store object: its own for a store without files, else its file's
(looked up once per store: every topic window asks every turn)."""
_THREADS_LOCK = threading.Lock()


def topic_tokens(
    store: object, topic_id: str, messages: Sequence[StoredMessage], count: TokenCounter
) -> int:
    """The tokens of ``messages`` (a topic of ``store``, in order, as it reads now)."""
    thread = _thread_totals(store)
    name = counter_key(count)
    key = (name or f"object:{id(count)}", topic_id)
    with thread.lock:
        known = thread.totals.get(key)
    if known is None or not known.matches(messages):
        known = _Total(0, 0, "", 0)
    if known.count == len(messages):
        return known.tokens
    tokens = known.tokens + sum(count(m["content"]) for m in messages[known.count :])
    last = messages[-1]
    total = _Total(len(messages), tokens, last["id"], _checksum(last))
    with thread.lock:
        thread.totals[key] = total
        if name is not None and thread.path is not None:
            thread.unsaved += len(messages) - known.count
            if thread.unsaved >= SAVE_AFTER_MESSAGES:
                _save(thread)
    return tokens


def _checksum(message: StoredMessage) -> int:
    return zlib.crc32(message["content"].encode("utf-8", "surrogatepass"))


def _thread_totals(store: object) -> _ThreadTotals:
    """The totals of the thread ``store`` holds, through any dry-run overlays on it."""
    while isinstance(store, OverlayTopicStore):
        store = store.base
    with _THREADS_LOCK:
        found = _BY_STORE.get(store)
        if found is not None:
            return found
        if not isinstance(store, JsonlTopicStore):
            found = _ThreadTotals(None)
        else:
            path = store.root / TOTALS_FILE
            found = _ON_FILES.get(path)
            if found is None:
                found = _ON_FILES[path] = _ThreadTotals(path, _load(path))
        _BY_STORE[store] = found
        return found


def _load(path: Path) -> dict[tuple[str, str], _Total]:
    """The saved totals; none (logged) when the file is missing, unreadable or foreign."""
    try:
        data: Any = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        log.warning("%s: unreadable (%s); topic token totals will be counted again", path, error)
        return {}
    try:
        if data["format"] != FORMAT or data["version"] != VERSION:
            raise ValueError("another format or version")
        return {
            (str(counter), str(topic)): _Total(int(n), int(tokens), str(last), int(checksum))
            for counter, topics in data["totals"].items()
            for topic, (n, tokens, last, checksum) in topics.items()
        }
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        log.warning("%s: not a token totals file (%s); they will be counted again", path, error)
        return {}


def _save(thread: _ThreadTotals) -> None:
    """Write every named counter's totals (the caller holds ``thread.lock``)."""
    assert thread.path is not None
    saved: dict[str, dict[str, list[Any]]] = {}
    for (counter, topic), total in thread.totals.items():
        if not counter.startswith("object:"):
            saved.setdefault(counter, {})[topic] = [
                total.count,
                total.tokens,
                total.last_id,
                total.last_checksum,
            ]
    data = {"format": FORMAT, "version": VERSION, "totals": saved}
    try:
        # Not one of the stores: nothing caches it, so no other process need reopen anything.
        replace_durably(thread.path, json.dumps(data).encode("utf-8"), cached=False)
    except OSError as error:
        log.warning("%s: not written (%s); totals are kept in memory", thread.path, error)
        return
    thread.unsaved = 0
