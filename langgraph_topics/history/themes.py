"""Themes: the concepts a thread comes back to, across its event units (seed 004 §3).

A theme starts from a keyword that heads a unit (``units.Unit.headline``) and recurs: other
units use it too, and it is not in every unit (a word every day uses, such as a greeting's
vocative, names no subject). A Chinese word holding a shorter theme word is folded into it
(健身房, 健身计划 → 健身); keywords that recur in largely the same units are one theme
(``CO_OCCURRENCE``): "Postgres" and "inventory" discussed together are one concept, named by
the keyword that says most. A theme's units are those using any of its keywords; its name is
its best keyword as people wrote it, a noun or a name before a word that only qualifies
one (``terms.names_a_thing``); a theme none of whose keywords names a thing is none.

Computed natively from the refined turns; a model, when one is used, only phrases from this
material (the seed's "LLM only phrases").
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from langgraph_topics.history.terms import names_a_thing
from langgraph_topics.history.units import Unit, unit_weight

CO_OCCURRENCE = 0.5
"""Two recurring keywords whose units overlap at least this much (Jaccard) are one theme."""
MOST_UNITS = 0.5
"""A keyword in more than this share of the units (and more than ``_FEW``) is no theme."""
_FEW = 3


@dataclass
class Theme:
    """A recurring concept and the units that carry it, oldest first."""

    id: str
    name: str
    keys: list[str]
    """Its keywords' match keys, best first."""
    keywords: list[str]
    """The same as written."""
    units: list[int] = field(default_factory=list)
    """Indexes of its units, in time order."""
    weight: float = 0.0


def find_themes(units: Sequence[Unit]) -> list[Theme]:
    """The thread's themes, the most talked about first."""
    if not units:
        return []
    total = len(units)
    using = _units_using(units)
    ceiling = max(_FEW, int(MOST_UNITS * total))
    recurring = [k for k in using if 2 <= len(using[k]) <= ceiling]
    parent = {key: key for key in recurring}

    def root(key: str) -> str:
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    def join(a: str, b: str) -> None:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    ordered = sorted(recurring, key=len)
    for place, key in enumerate(ordered):
        for shorter in ordered[:place]:
            if not key.isascii() and not shorter.isascii() and shorter in key:
                join(shorter, key)  # 健身房 is 健身's
    # Keywords join the theme of a better one they recur with, never a chain of them: a long
    # chat's words each share units with the next, and would all be one theme.
    sets = {key: set(using[key]) for key in recurring}
    seeds: list[str] = []
    for key in sorted(recurring, key=lambda k: (-_spread(units, using[k], k), k)):
        if root(key) != key:
            continue  # folded into a shorter word already
        for seed in seeds:
            union = len(sets[key] | sets[seed])
            if union and len(sets[key] & sets[seed]) / union >= CO_OCCURRENCE:
                join(seed, key)
                break
        else:
            seeds.append(key)
    groups: dict[str, list[str]] = {}
    for key in recurring:
        groups.setdefault(root(key), []).append(key)
    overall: dict[str, int] = {}
    for unit in units:
        for key, count in unit.counts.items():
            overall[key] = overall.get(key, 0) + count
    themes = [
        _theme(keys, units, using, total, overall)
        for keys in groups.values()
        if any(names_a_thing(_form(units, using[k], k)) for k in keys)
    ]
    return sorted(themes, key=lambda t: (-t.weight, t.name))


def _spread(units: Sequence[Unit], places: Sequence[int], key: str) -> float:
    """How much a keyword carries: its rank strength over the units using it."""
    return sum(units[p].strength.get(key, 0.0) for p in places)


def _units_using(units: Sequence[Unit]) -> dict[str, list[int]]:
    """Each keyword's units; a Chinese word's include those of the words holding it (射击场)."""
    using: dict[str, set[int]] = {}
    for place, unit in enumerate(units):
        for key in unit.counts:
            using.setdefault(key, set()).add(place)
    for key in list(using):
        if key.isascii() or len(key) < 3:
            continue
        for size in range(2, len(key)):
            for start in range(len(key) - size + 1):
                part = key[start : start + size]
                if part in using:
                    using[part] |= using[key]
    return {key: sorted(places) for key, places in using.items()}


def _theme(
    keys: Sequence[str],
    units: Sequence[Unit],
    using: dict[str, list[int]],
    total: int,
    overall: dict[str, int],
) -> Theme:
    score: dict[str, float] = dict.fromkeys(keys, 0.0)
    members: set[int] = set()
    for key in keys:
        members.update(using[key])
        for place in using[key]:
            if key in units[place].counts:
                score[key] += unit_weight(units[place], key, len(using[key]), total)
    # The name is the keyword most particular to the theme: the share of its uses in the
    # thread that fall in the theme's units (射击, all in them, before 尝试, said everywhere).
    inside = {k: sum(units[p].counts.get(k, 0) for p in members) for k in keys}
    strength = {k: sum(units[p].strength.get(k, 0.0) for p in members) for k in keys}
    written = {k: _form(units, using[k], k) for k in keys}
    # A noun or a name before a word that only qualifies one (a theme keeps both as keywords).
    ranked = sorted(
        keys,
        key=lambda k: (
            not names_a_thing(written[k]),
            -round(inside[k] / max(1, overall.get(k, 0)), 2),
            -strength[k],
            k,
        ),
    )
    forms = [written[k] for k in ranked]
    ordered = sorted(members, key=lambda p: (units[p].start or "", p))
    digest = hashlib.sha1(ranked[0].encode("utf-8")).hexdigest()[:8]
    return Theme(
        id=f"th-{digest}",
        name=forms[0],
        keys=ranked,
        keywords=forms,
        units=ordered,
        weight=sum(score.values()),
    )


def _form(units: Sequence[Unit], places: Sequence[int], key: str) -> str:
    """The way the thread writes a keyword most often."""
    forms = Counter(units[p].forms[key] for p in places if key in units[p].forms)
    return forms.most_common(1)[0][0]
