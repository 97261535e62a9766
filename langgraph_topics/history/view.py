"""A thread's history layer as a whole: refined turns, units, buckets, themes, cached.

Built when asked (``TopicMemory.themes``, ``trace``), never on a turn: the refined turns are
read from their file (recording first the split messages none holds: messages split before the
layer existed, or whose append a crash tore), the units, buckets and themes computed from them
and the message index's vectors. The result is kept with the log, under a fingerprint of what
it was made from (records, the store's messages, the index): a split or a review that adds or
moves messages changes it, and the next question computes again from the stored records.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from langgraph_topics.history.refined_turns import (
    RefinedTurn,
    RefinedTurnLog,
    exchanges,
    refine_exchange,
)
from langgraph_topics.history.themes import Theme, find_themes
from langgraph_topics.history.units import (
    Unit,
    exchange_vectors,
    make_buckets,
    make_units,
    ordered_turns,
)
from langgraph_topics.roles.protocols import ThemePhrase
from langgraph_topics.services import ThreadStores
from langgraph_topics.state.records import StoredMessage

_LOCK = threading.Lock()
_FALLBACK_LOGS: dict[int, RefinedTurnLog] = {}
"""In-memory logs of thread stores opened without one (stores built by hand, tests)."""


@dataclass
class HistoryView:
    """The history layer of a thread at one moment."""

    turns: list[RefinedTurn]
    """Refined turns in conversation order."""
    units: list[Unit]
    buckets: list[list[int]]
    themes: list[Theme]
    located: dict[str, str]
    """Each split message's topic now."""
    phrases: dict[str, ThemePhrase | None] = field(default_factory=dict)
    """Theme id → the cheap model's phrase (None: asked, the native name stands);
    ``history.phrasing`` fills it when ``themes`` or ``trace`` is asked."""
    phrasing_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Held while phrasing, so two callers do not ask the model for the same view."""

    def unit_of_turn(self) -> dict[int, int]:
        """Refined turn index → unit index."""
        return {turn: place for place, unit in enumerate(self.units) for turn in unit.turns}


def refined_log(stores: ThreadStores) -> RefinedTurnLog:
    """The refined turns of a thread's stores (in memory for stores that keep none)."""
    log = stores.refined_turns
    if log is not None:
        return log
    with _LOCK:
        return _FALLBACK_LOGS.setdefault(id(stores.topic_store), RefinedTurnLog(None))


def backfill(stores: ThreadStores) -> int:
    """Record the split messages no refined turn holds, in conversation order.

    The message index holds every split message in split order (conversation order), so the
    order costs no reading of topic files; only the messages lacking a record are read.
    Callers hold the thread's files lock (the review and the questions append under it).
    """
    log = refined_log(stores)
    located = stores.topic_store.message_ids()
    order = list(dict.fromkeys(i for i in stores.message_index.ids if i in located))
    if len(order) < len(located):
        indexed = set(order)
        order += [i for i in located if i not in indexed]
    missing = log.missing(order)
    if not missing:
        return 0
    found = stores.topic_store.get_messages(missing)
    return log.backfill([found[i] for i in missing if i in found], located)


def history_view(stores: ThreadStores, unsplit: Sequence[StoredMessage] = ()) -> HistoryView:
    """The thread's units, buckets and themes, computed from its refined turns (cached).

    ``unsplit``: the working set's messages not split yet; their exchanges are refined here,
    in memory (they are recorded once split), so a trace reaches the latest turns too.
    """
    backfill(stores)
    log = refined_log(stores)
    located = stores.topic_store.message_ids()
    index = stores.message_index
    pending = [m for m in unsplit if m["id"] not in located]
    fingerprint: Hashable = (
        log.fingerprint(),
        len(located),
        index.token,
        len(index),
        tuple(m["id"] for m in pending),
    )
    cached = log.cache
    if cached is not None and cached[0] == fingerprint:
        view = cached[1]
        assert isinstance(view, HistoryView)
        return view
    recent = [refine_exchange(exchange, "") for exchange in exchanges(pending)]
    # The log serves every branch of the thread: this one reads the exchanges it holds.
    held = [r for r in log.records() if any(i in located for i in r["ids"])]
    turns = ordered_turns([*held, *recent])
    wanted = [i for record in turns for i in record["ids"]]
    vectors = exchange_vectors(turns, index.stored_vectors(wanted))
    topic_of = {
        record["key"]: located.get(record["key"], record.get("topic", "")) for record in turns
    }
    units = make_units(turns, vectors, topic_of)
    buckets = make_buckets(units)
    view = HistoryView(turns, units, buckets, find_themes(units), located)
    log.cache = (fingerprint, view)
    return view
