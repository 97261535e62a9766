"""A thread's history layer as a whole: refined turns, units, buckets, themes, cached.

Built when asked (``TopicMemory.themes``, ``trace``), never on a turn: the refined turns are
read from their file (recording first the split messages none holds: messages split before the
layer existed, or whose append a crash tore), the units, buckets and themes computed from them
and the message index's vectors. The result is kept with the log, under a fingerprint of what
it was made from (records, the store's messages, the index), and on disk
(``history.view_cache``), under the list of refined turns it was made from.

When refined turns are added at the end (new exchanges: what a split and the review add), the
units and buckets are extended, not made again: the new exchanges join the last unit or open
new ones, the new units join the buckets (``units.extend_units``, ``units.extend_buckets``),
and the themes are found again from the units. The exchanges' directions stay centred on the
mean exchange of when the units were made (``REBUILD_GROWTH``): that is the one way an
extension differs from a computation from nothing, which re-centres on the thread's mean now.
Anything else (turns of a branch that are not the cached ones, a merge that moved exchanges
to another topic, records inserted earlier in time, another embedder) computes them again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from langgraph_topics.history.refined_turns import (
    RefinedTurn,
    RefinedTurnLog,
    exchanges,
    refine_exchange,
    speakers_of,
)
from langgraph_topics.history.themes import Theme, find_themes
from langgraph_topics.history.units import (
    Unit,
    exchange_centre,
    exchange_vectors,
    extend_buckets,
    extend_units,
    make_units,
    ordered_turns,
)
from langgraph_topics.history.view_cache import (
    VIEW_CACHE_FILE,
    ViewState,
    load_view_state,
    save_view_state,
    turn_signature,
    vector_probe,
)
from langgraph_topics.retrieval.message_index import MessageIndex
from langgraph_topics.roles.protocols import ThemePhrase
from langgraph_topics.services import ThreadStores
from langgraph_topics.state.records import StoredMessage

logger = logging.getLogger(__name__)

REBUILD_GROWTH = 1.5
"""Units are made again from nothing (re-centred) once the turns number this many times as
many as when they were last: extensions in between cost what they add, and the whole
computation, paid after each half again, stays a constant share of what was added."""
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
    # The log serves every branch of the thread: this one reads the exchanges it holds.
    held = ordered_turns([r for r in log.records() if any(i in located for i in r["ids"])])
    speakers = speakers_of(pending)
    recent = [refine_exchange(exchange, "", speakers) for exchange in exchanges(pending)]
    topic_of = {
        record["key"]: located.get(record["key"], record.get("topic", ""))
        for record in [*held, *recent]
    }
    state = recorded_state(log, held, topic_of, index)
    turns = held
    if recent:  # the unsplit exchanges extend it in memory only: they are not recorded yet
        turns = ordered_turns([*held, *recent])
        state = advance_state(state, turns, topic_of, index, recentre=False)[0]
    view = HistoryView(turns, state.units, state.buckets, state.themes, located)
    log.cache = (fingerprint, view)
    return view


def recorded_state(
    refined: RefinedTurnLog,
    turns: Sequence[RefinedTurn],
    topic_of: Mapping[str, str],
    index: MessageIndex,
) -> ViewState:
    """The state of the recorded turns: the one kept (in memory, else on disk), extended.

    A changed state is written to disk; a failed write costs nothing but the next reading.
    """
    path = refined.root / VIEW_CACHE_FILE if refined.root is not None else None
    known = refined.view_state if isinstance(refined.view_state, ViewState) else None
    if known is None and path is not None:
        known = load_view_state(path)
    state, how = advance_state(known, turns, topic_of, index)
    if how == STALE:
        logger.warning(
            "%s: the view was made from other refined turns (%d, %s…): computed again",
            path or "history view",
            len(known.signatures) if known is not None else 0,
            known.fingerprint[:8] if known is not None else "",
        )
    refined.view_state = state
    if path is not None and state is not known:
        try:
            save_view_state(path, state)
        except OSError as error:
            logger.warning("%s: view not kept on disk (made again when asked): %s", path, error)
    return state


SAME, EXTENDED, GROWN, STALE, NEW = "same", "extended", "grown", "stale", "new"
"""How ``advance_state`` got its state: as it was, extended, or computed again because the
turns grew past ``REBUILD_GROWTH``, because the known state is of other turns, or from none."""


def advance_state(
    known: ViewState | None,
    turns: Sequence[RefinedTurn],
    topic_of: Mapping[str, str],
    index: MessageIndex,
    *,
    recentre: bool = True,
) -> tuple[ViewState, str]:
    """``known`` brought to ``turns``: itself, extended, or (not a prefix of them) remade.

    ``recentre=False``: extended however much the turns grew (the unsplit exchanges, whose
    units live as long as the question).
    """
    signatures = [
        turn_signature(r["key"], topic_of.get(r["key"], ""), len(r["ids"]), r.get("time"))
        for r in turns
    ]
    if known is not None and known.signatures == signatures:
        return known, SAME
    how = _extension(known, signatures, turns, index)
    if how == EXTENDED or (how == GROWN and not recentre):
        assert known is not None
        return extend_state(known, turns, signatures, topic_of, index), EXTENDED
    return build_state(turns, signatures, topic_of, index), how


def _extension(
    known: ViewState | None,
    signatures: Sequence[str],
    turns: Sequence[RefinedTurn],
    index: MessageIndex,
) -> str:
    """Whether ``known`` was made from the first of ``turns`` and may be extended (EXTENDED)."""
    if known is None or not known.units or known.centre is None:
        return NEW
    size = len(known.signatures)
    if size >= len(signatures) or list(signatures[:size]) != known.signatures:
        return STALE
    if _probe(turns, index) != known.probe:
        return STALE
    if len(signatures) > REBUILD_GROWTH * known.anchor:
        return GROWN
    return EXTENDED


def _probe(turns: Sequence[RefinedTurn], index: MessageIndex) -> str:
    if not turns:
        return ""
    first = turns[0]["ids"][0]
    return vector_probe(index.stored_vectors([first]).get(first))


def build_state(
    turns: Sequence[RefinedTurn],
    signatures: Sequence[str],
    topic_of: Mapping[str, str],
    index: MessageIndex,
) -> ViewState:
    """Units, buckets and themes of ``turns`` from nothing."""
    stored = index.stored_vectors([i for record in turns for i in record["ids"]])
    centre = exchange_centre(turns, stored)
    units = make_units(turns, exchange_vectors(turns, stored, centre), topic_of)
    buckets, sums = extend_buckets(units, [], None, 0)
    return ViewState(
        signatures=list(signatures),
        anchor=len(turns),
        centre=centre,
        probe=_probe(turns, index),
        units=units,
        buckets=buckets,
        sums=_padded(sums, len(buckets)),
        themes=find_themes(units),
    )


def extend_state(
    known: ViewState,
    turns: Sequence[RefinedTurn],
    signatures: Sequence[str],
    topic_of: Mapping[str, str],
    index: MessageIndex,
) -> ViewState:
    """``known`` extended by the turns after its own (see the module's docstring)."""
    reopened = len(known.units) - 1
    # Vectors from the unit before the last: its last one is what the reopened unit's first
    # exchange was compared with, should that exchange have none of its own.
    first = known.units[-2].turns[0] if len(known.units) > 1 else 0
    stored = index.stored_vectors([i for record in turns[first:] for i in record["ids"]])
    vectors = [None] * first + exchange_vectors(turns[first:], stored, known.centre)
    units = extend_units(known.units, turns, vectors, topic_of)
    buckets = [list(members) for members in known.buckets]
    sums = known.sums
    last = known.units[-1].bucket
    buckets[last].remove(reopened)  # the reopened unit is sorted again
    if not buckets[last]:  # it founded the last bucket
        buckets.pop()
        sums = sums[: len(buckets)]
    buckets, sums = extend_buckets(units, buckets, sums, reopened)
    return ViewState(
        signatures=list(signatures),
        anchor=known.anchor,
        centre=known.centre,
        probe=known.probe,
        units=units,
        buckets=buckets,
        sums=_padded(sums, len(buckets)),
        themes=find_themes(units),
    )


def _padded(sums: npt.NDArray[np.float32], rows: int) -> npt.NDArray[np.float32]:
    """One row a bucket (the last unit's own bucket, left out of the sums, counts zero)."""
    if sums.shape[0] >= rows:
        return sums[:rows]
    padding = np.zeros((rows - sums.shape[0], sums.shape[1]), dtype=np.float32)
    return np.concatenate([sums, padding])
