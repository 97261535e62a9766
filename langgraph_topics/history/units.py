"""Event units and buckets: the refined turns grouped into decisions, events, debates (§3).

A unit is a run of consecutive exchanges about one thing: an exchange joins the unit before it
when it comes soon after (``MAX_GAP_SECONDS``) and carries on its subject, which the thread's
own material tells: a keyword they share, an exchange that names nothing (a follow-up such as
"ok, and the backups?"), or embeddings that agree (the message index's vectors, averaged per
exchange: nothing is embedded again), more readily when the split put both in one topic.
Units therefore cross topics when the conversation did, and a subject taken up again days later
is a new unit.

A unit is a ``decision`` when one of its messages states a change of state, a ``debate`` when
it weighs alternatives without one ("or", "versus", 还是…), an ``event`` otherwise.

Buckets gather similar units, wherever they are in time: a unit joins the bucket whose centre
is nearest when close enough, or a keyword of its headline is the bucket's; buckets carry no
name (themes do, ``history.themes``).
"""

from __future__ import annotations

import copy
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from langgraph_topics.history.refined_turns import RefinedTurn
from langgraph_topics.history.terms import key_of
from langgraph_topics.keywords.specificity import specificity
from langgraph_topics.stores.topic_records import parse_time

MAX_GAP_SECONDS = 3 * 3600
"""Exchanges further apart than this are never one unit (a subject taken up again)."""
MAX_EXCHANGES = 12
"""A unit is one decision, event or debate: longer runs are cut."""
JOIN_COSINE = 0.5
"""Embeddings at least this close join two exchanges across topics."""
JOIN_COSINE_SAME_TOPIC = 0.35
"""The same, for two exchanges the split filed in one topic (its judgement counts too)."""
RECENT_EXCHANGES = 2
"""A new exchange carries on a unit when it shares a keyword with one of its last two."""
BUCKET_COSINE = 0.45
HEADLINE = 4
"""Keywords a unit is headed by."""
_DEBATE = re.compile(
    r"\b(?:or|versus|vs\.?|instead|either|compare|pros and cons)\b|还是|或者|对比|比较", re.I
)

Vector = npt.NDArray[np.float32]


@dataclass
class Unit:
    """One event unit: consecutive exchanges about one thing."""

    id: str
    turns: list[int] = field(default_factory=list)
    """Indexes of its refined turns (in the ordered list the units were made from)."""
    counts: Counter[str] = field(default_factory=Counter)
    """Keyword match key → how many of its exchanges use it."""
    strength: dict[str, float] = field(default_factory=dict)
    """Keyword match key → how high its exchanges rank it (1 first, 1/2 second…), summed."""
    forms: dict[str, str] = field(default_factory=dict)
    """Keyword match key → the form written first."""
    topics: list[str] = field(default_factory=list)
    start: str | None = None
    end: str | None = None
    kind: str = "event"
    headline: list[str] = field(default_factory=list)
    """Match keys of its most telling keywords (``HEADLINE``), best first."""
    bucket: int = -1
    vector: Vector | None = None

    def keys(self) -> set[str]:
        """Every keyword match key of the unit."""
        return set(self.counts)


def ordered_turns(records: Sequence[RefinedTurn]) -> list[RefinedTurn]:
    """Refined turns in conversation order: by time, undated ones where they were written."""
    dated = [(_seconds(r.get("time")), place, r) for place, r in enumerate(records)]
    last = -math.inf
    keyed: list[tuple[float, int, RefinedTurn]] = []
    for seconds, place, record in dated:
        if seconds is None:
            seconds = last  # an undated exchange stays after the one written before it
        last = max(last, seconds)
        keyed.append((seconds, place, record))
    return [record for _, _, record in sorted(keyed, key=lambda k: (k[0], k[1]))]


def _seconds(stamp: str | None) -> float | None:
    moment = parse_time(stamp)
    return moment.timestamp() if isinstance(moment, datetime) else None


def exchange_vectors(
    turns: Sequence[RefinedTurn],
    stored: Mapping[str, npt.NDArray[np.float32]],
    centre: Vector | None = None,
) -> list[Vector | None]:
    """Each exchange's direction: the mean of its messages' indexed vectors, centred, normalised.

    Centred on the thread's mean exchange: every exchange of a chat shares a "chat" direction
    (greetings, the speakers' names, the thread's language), which left in made every two
    exchanges look alike (LoCoMo's casual sessions: one bucket for all). What is left is what
    tells an exchange apart from the rest of its thread. ``centre`` (``exchange_centre``)
    centres on the mean of other exchanges: the thread's when the units were first made.
    """
    means = _exchange_means(turns, stored)
    if centre is None:
        centre = _centre_of(means)
    if centre is None:
        return [None] * len(turns)
    vectors: list[Vector | None] = []
    for mean in means:
        if mean is None or mean.shape != centre.shape:
            vectors.append(None)
            continue
        shifted = mean - centre
        norm = float(np.linalg.norm(shifted))
        vectors.append(shifted / norm if norm > 0 else None)
    return vectors


def exchange_centre(
    turns: Sequence[RefinedTurn], stored: Mapping[str, npt.NDArray[np.float32]]
) -> Vector | None:
    """The thread's mean exchange, which ``exchange_vectors`` centres on (None: no vectors)."""
    return _centre_of(_exchange_means(turns, stored))


def _exchange_means(
    turns: Sequence[RefinedTurn], stored: Mapping[str, npt.NDArray[np.float32]]
) -> list[Vector | None]:
    means: list[Vector | None] = []
    for record in turns:
        rows = [stored[i] for i in record["ids"] if i in stored]
        means.append(np.mean(np.asarray(rows, dtype=np.float32), axis=0) if rows else None)
    return means


def _centre_of(means: Sequence[Vector | None]) -> Vector | None:
    present = [m for m in means if m is not None]
    if not present:
        return None
    if len(present) == 1:  # one exchange: nothing to tell it apart from
        return np.zeros_like(present[0])
    return np.asarray(np.mean(np.asarray(present), axis=0), dtype=np.float32)


def make_units(
    turns: Sequence[RefinedTurn],
    vectors: Sequence[Vector | None],
    topic_of: Mapping[str, str],
) -> list[Unit]:
    """Group ordered refined turns into units (see the module's docstring)."""
    return extend_units([], turns, vectors, topic_of)


def extend_units(
    made: Sequence[Unit],
    turns: Sequence[RefinedTurn],
    vectors: Sequence[Vector | None],
    topic_of: Mapping[str, str],
) -> list[Unit]:
    """The units of ``turns``, given ``made``: the units of the first of them, unchanged.

    The exchanges added at the end join the last unit or open new ones, as a grouping of all
    of them would: the last unit is made again from its first exchange (it opened a unit then
    and opens one now; the ones after it are judged against the same unit, the same last
    exchange and the same recent keywords), the others are kept. ``made`` is not changed;
    ``vectors`` is read from the last unit's first exchange on (earlier ones may be None).
    Headlines are computed again for all units: a keyword's rarity is the whole thread's.
    """
    kept = [copy.copy(unit) for unit in made[:-1]]
    first = made[-1].turns[0] if made else 0
    units = _group(turns, vectors, topic_of, kept, first)
    _headlines(units)
    return units


def _group(
    turns: Sequence[RefinedTurn],
    vectors: Sequence[Vector | None],
    topic_of: Mapping[str, str],
    units: list[Unit],
    first: int,
) -> list[Unit]:
    """Group ``turns[first:]`` into units appended to ``units`` (one is opened at ``first``)."""
    opened = len(units)
    current: Unit | None = None
    # An undated exchange, or one the index has no vector for, is judged by the last before it
    # that has them: seeded from before ``first`` as the grouping of all of them had it.
    last_time = next(
        (s for s in (_seconds(t.get("time")) for t in reversed(turns[:first])) if s is not None),
        None,
    )
    last_vector = next((v for v in reversed(vectors[:first]) if v is not None), None)
    last_topic: str | None = None
    recent_keys: list[set[str]] = []
    for place in range(first, len(turns)):
        record = turns[place]
        keys = {key_of(word): word for word in record.get("keywords", [])}
        topic = topic_of.get(record["key"], record.get("topic", ""))
        seconds = _seconds(record.get("time"))
        vector = vectors[place]
        joins = current is not None and len(current.turns) < MAX_EXCHANGES
        if joins and seconds is not None and last_time is not None:
            joins = seconds - last_time <= MAX_GAP_SECONDS
        if joins and current is not None:
            cosine = _cosine(vector, current.vector, last_vector)
            threshold = JOIN_COSINE_SAME_TOPIC if topic == last_topic else JOIN_COSINE
            # A keyword shared with the last exchanges, not with the whole unit: a long chat
            # shares some word with everything said before, and would be one unit.
            recent = set().union(*recent_keys[-RECENT_EXCHANGES:])
            joins = not keys or bool(keys.keys() & recent) or cosine >= threshold
        if not joins or current is None:
            current = Unit(id=f"u{len(units) + 1}")
            units.append(current)
            recent_keys = []
        recent_keys.append(set(keys))
        _add(current, place, record, keys, topic, vector)
        last_time = seconds if seconds is not None else last_time
        last_vector = vector if vector is not None else last_vector
        last_topic = topic
    for unit in units[opened:]:
        _finish(unit, turns)
    return units


def _cosine(vector: Vector | None, *others: Vector | None) -> float:
    if vector is None:
        return 0.0
    best = 0.0
    for other in others:
        if other is not None:
            norm = float(np.linalg.norm(other))
            if norm > 0:
                best = max(best, float(vector @ other) / norm)
    return best


def _add(
    unit: Unit,
    place: int,
    record: RefinedTurn,
    keys: Mapping[str, str],
    topic: str,
    vector: Vector | None,
) -> None:
    unit.turns.append(place)
    for rank, (key, form) in enumerate(keys.items()):
        unit.counts[key] += 1
        unit.strength[key] = unit.strength.get(key, 0.0) + 1.0 / (1 + rank)
        unit.forms.setdefault(key, form)
    if topic and topic not in unit.topics:
        unit.topics.append(topic)
    if vector is not None:
        unit.vector = vector.copy() if unit.vector is None else unit.vector + vector


def _finish(unit: Unit, turns: Sequence[RefinedTurn]) -> None:
    records = [turns[p] for p in unit.turns]
    times = [r.get("time") for r in records if r.get("time")]
    unit.start, unit.end = (times[0], times[-1]) if times else (None, None)
    if any(r.get("states") for r in records):
        unit.kind = "decision"
    elif len(records) > 1 and any(_DEBATE.search(r.get("summary", "")) for r in records):
        unit.kind = "debate"
    if unit.vector is not None:
        norm = float(np.linalg.norm(unit.vector))
        unit.vector = unit.vector / norm if norm > 0 else None


def _headlines(units: Sequence[Unit]) -> None:
    """Each unit's most telling keywords: used in it, rare in general use and in the thread."""
    frequency: Counter[str] = Counter()
    for unit in units:
        frequency.update(unit.keys())
    total = max(1, len(units))
    for unit in units:
        unit.headline = sorted(
            unit.counts,
            key=lambda k: -unit_weight(unit, k, frequency[k], total),
        )[:HEADLINE]


def unit_weight(unit: Unit, key: str, units_using: int, total: int) -> float:
    """How much ``key`` says what ``unit`` is about: use × specificity × rarity in the thread."""
    form = unit.forms[key]
    rarity = math.log(1.0 + total / max(1, units_using))
    return unit.counts[key] * specificity(form if not form.isascii() else form.lower()) * rarity


def make_buckets(units: Sequence[Unit]) -> list[list[int]]:
    """Similar units together (indexes into ``units``); sets each unit's ``bucket``.

    A unit joins the bucket whose centre (its members' summed directions) is nearest, when
    close enough, or whose founder is headed by one of its two best keywords.
    """
    return extend_buckets(units, [], None, 0)[0]


def extend_buckets(
    units: Sequence[Unit],
    buckets: Sequence[Sequence[int]],
    sums: npt.NDArray[np.float32] | None,
    start: int,
) -> tuple[list[list[int]], npt.NDArray[np.float32]]:
    """Put ``units[start:]`` into ``buckets`` (those of ``units[:start]``, with their ``sums``).

    ``sums``: each bucket's members' summed directions (None: no bucket yet). Only the new
    units need their ``vector``. The founders' heads are their headlines now, as in a sorting
    of all of them; the units sorted before keep their buckets.

    Returns:
        The buckets, and their sums before the last unit joined (what the next extension,
        which makes the last unit again, starts from).
    """
    grown = [list(members) for members in buckets]
    if sums is not None and sums.shape[0] >= len(grown):
        dimension = sums.shape[1]
    else:
        dimension = next((len(u.vector) for u in units[start:] if u.vector is not None), 0)
        sums = None
    rows = max(1, len(grown) + len(units) - start)
    totals = np.zeros((rows, dimension), dtype=np.float32)
    if sums is not None:
        totals[: len(grown)] = sums[: len(grown)]
    heads: dict[str, list[int]] = {}
    for number, members in enumerate(grown):
        for key in units[members[0]].headline[:2]:
            heads.setdefault(key, []).append(number)
    before_last = totals[: len(grown)].copy()
    for place in range(start, len(units)):
        unit = units[place]
        if place == len(units) - 1:
            before_last = totals[: len(grown)].copy()
        scores = np.zeros(len(grown), dtype=np.float32)
        vector = unit.vector if unit.vector is not None and len(unit.vector) == dimension else None
        if vector is not None and grown:
            centres = totals[: len(grown)]
            norms = np.linalg.norm(centres, axis=1)
            scores = np.where(norms > 0, centres @ vector / np.maximum(norms, 1e-12), 0.0)
        for key in unit.headline[:2]:
            for number in heads.get(key, ()):
                scores[number] = max(float(scores[number]), BUCKET_COSINE)
        best = int(np.argmax(scores)) if len(scores) else -1
        if best < 0 or float(scores[best]) < BUCKET_COSINE:
            best = len(grown)
            grown.append([])
            # The heads stay the founder's: grown with every member they would match everything.
            for key in unit.headline[:2]:
                heads.setdefault(key, []).append(best)
        grown[best].append(place)
        if vector is not None:
            totals[best] += vector
        unit.bucket = best
    return grown, before_last
