"""Themes phrased by the cheap model from their precomputed material, once per history view.

``themes`` and ``trace`` name a theme natively by its keyword as the thread writes it. With a
cheap model configured (``Roles.theme_phraser``) the model is shown each theme's material
only (keywords, a bounded number of its units' headlines and one-liners, its changes of state)
and writes a name as a person would and one line on the timeline. The phrases are kept on the
view, so the same view is phrased once; a split or a review that changes the thread makes a
new view, phrased again when asked. Nothing of this runs on a chat turn.
"""

from __future__ import annotations

from collections.abc import Sequence

from langgraph_topics.history.themes import Theme
from langgraph_topics.history.timeline import theme_states
from langgraph_topics.history.view import HistoryView
from langgraph_topics.roles.native.text import clip
from langgraph_topics.roles.protocols import ThemeMaterial, ThemePhrase, ThemePhraser

UNITS_SHOWN = 8
"""Most units of one theme shown (the first, the last, those stating a change, then spread)."""
STATES_SHOWN = 8
"""Most changes of state of one theme shown (the newest)."""
KEYWORDS_SHOWN = 8
LINE_CHARS = 160
"""Bound of one unit's one-liner: with the bounds above a theme's material is a few hundred
words at most, whatever the thread's length."""
THEMES_PER_CALL = 12
"""Themes phrased by one model call."""
PHRASED_THEMES = 24
"""``themes`` phrases the most talked about ones only; the others keep their native names
(``trace`` phrases the theme it traces, wherever it ranks)."""


def _date(value: str | None) -> str:
    return (value or "")[:10] or "undated"


def _shown_units(view: HistoryView, theme: Theme, stating: set[str]) -> list[int]:
    """At most ``UNITS_SHOWN`` of the theme's units, in time order."""
    places = list(theme.units)
    if len(places) <= UNITS_SHOWN:
        return places
    chosen = {places[0], places[-1]}
    chosen |= {p for p in places if view.units[p].id in stating}
    rest = [p for p in places if p not in chosen]
    room = max(0, UNITS_SHOWN - len(chosen))
    if room and rest:
        step = len(rest) / room
        chosen |= {rest[int(i * step)] for i in range(min(room, len(rest)))}
    return sorted(chosen, key=places.index)[:UNITS_SHOWN]


def theme_material(view: HistoryView, theme: Theme) -> ThemeMaterial:
    """What the model is shown of ``theme``: its keywords, units and changes of state."""
    states = theme_states(view, theme)[-STATES_SHOWN:]
    stating = {s["unit_id"] for s in states}
    units: list[str] = []
    for place in _shown_units(view, theme, stating):
        unit = view.units[place]
        headline = ", ".join(unit.forms.get(key, key) for key in unit.headline)
        said = view.turns[unit.turns[0]]["summary"] if unit.turns else ""
        units.append(f"{_date(unit.start)} [{headline}] {clip(said, LINE_CHARS)}")
    return {
        "theme_id": theme.id,
        "name": theme.name,
        "keywords": theme.keywords[:KEYWORDS_SHOWN],
        "units": units,
        "states": [f"{_date(s['time'])} {s['kind']} {s['object']}" for s in states],
    }


def phrased_themes(
    view: HistoryView, phraser: ThemePhraser, themes: Sequence[Theme]
) -> dict[str, ThemePhrase]:
    """Theme id → phrase of those of ``themes`` the model phrased (asked once per view).

    A theme the model left out or could not phrase keeps its native name, and is not asked
    again for this view. A theme made up for one query (``trace`` of words naming no theme)
    is not the view's, so it is not phrased: its phrase could not be kept for the view.
    """
    own = {id(t) for t in view.themes}
    themes = [t for t in themes if id(t) in own]
    with view.phrasing_lock:
        wanted = [t for t in themes if t.id not in view.phrases]
        for start in range(0, len(wanted), THEMES_PER_CALL):
            batch = wanted[start : start + THEMES_PER_CALL]
            found = phraser.phrase([theme_material(view, theme) for theme in batch])
            for theme in batch:
                view.phrases[theme.id] = found.get(theme.id)
        # Copies: a caller changing its result does not change the view's.
        return {
            t.id: {"name": phrase["name"], "summary": phrase["summary"]}
            for t in themes
            if (phrase := view.phrases.get(t.id)) is not None
        }
