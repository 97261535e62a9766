"""A theme's timeline with the original messages: what ``trace`` and ``themes`` answer.

``trace`` finds the theme a query names (its keywords, as written or by stem), or, when none
does, the theme holding the messages a thread-wide search finds best (``search_history``).
Its timeline is one entry per unit, oldest first: the first mention, the changes of state
("we chose X", "switch to Y", "we dropped X", in time order, each with the message stating it
and its exchange's ids), the last mention, each with quotes of the original messages (the
sentence naming the theme, or the exchange's summary).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Literal, NotRequired, TypedDict

from langgraph_topics.history.states import StateKind
from langgraph_topics.history.terms import key_of, words_of
from langgraph_topics.history.themes import Theme
from langgraph_topics.history.units import Unit
from langgraph_topics.history.view import HistoryView
from langgraph_topics.roles.native.text import clip, message_text, split_sentences
from langgraph_topics.roles.protocols import ThemePhrase
from langgraph_topics.state.records import StoredMessage, TopicRecord

QUOTE_CHARS = 240
QUOTES_PER_ENTRY = 2
CLOSE_HIT = 0.7
"""A search hit sharing no word with the query counts from this relevance on."""
SEARCH_SHARE = 0.6
"""A query naming no theme traces the theme holding this share of its best messages' relevance
(else the units holding them, as a theme of their own)."""


class Quote(TypedDict):
    """An original message, quoted."""

    message_id: str
    role: str
    timestamp: str | None
    text: str
    """The sentence naming the theme (or the message's start), clipped to ``QUOTE_CHARS``."""


class StateChange(TypedDict):
    """One change of state on a theme's timeline."""

    kind: StateKind
    object: str
    time: str | None
    message_id: str
    """The message stating it."""
    message_ids: list[str]
    """Its whole exchange."""
    unit_id: str
    quote: Quote


class TimelineEntry(TypedDict):
    """One event unit of a theme, in time order."""

    mark: Literal["first", "mention", "last", "only"]
    unit_id: str
    unit_kind: str
    """``decision`` (a change of state is stated), ``debate`` (alternatives weighed), ``event``."""
    bucket: int
    """The bucket of similar units it belongs to (units of other themes may share it)."""
    start: str | None
    end: str | None
    topic_ids: list[str]
    topic_names: list[str]
    message_ids: list[str]
    summary: str
    states: list[StateChange]
    quotes: list[Quote]


class ThemeTrace(TypedDict):
    """What ``TopicMemory.trace`` returns."""

    theme_id: str
    theme: str
    keywords: list[str]
    matched_by: Literal["theme", "search"]
    first: str | None
    last: str | None
    current: str | None
    """The last state's object ("SQLite"), None when no change of state was stated."""
    states: list[StateChange]
    timeline: list[TimelineEntry]
    phrased: NotRequired[ThemePhrase]
    """The cheap model's name and one-line summary of the theme, from its material only
    (``history.phrasing``); left out natively or when the model could not phrase it. ``theme``
    keeps the native name."""


class ThemeSummary(TypedDict):
    """One theme as ``TopicMemory.themes`` lists it."""

    theme_id: str
    theme: str
    keywords: list[str]
    first: str | None
    last: str | None
    units: int
    exchanges: int
    messages: int
    states: int
    current: str | None
    topic_names: list[str]
    phrased: NotRequired[ThemePhrase]
    """The cheap model's name and one-line summary of the theme, from its material only
    (``history.phrasing``); left out natively or when the model could not phrase it. ``theme``
    keeps the native name."""


Search = Callable[[str], Sequence[Mapping[str, object]]]
"""A thread-wide search: hits with ``message_id`` and ``relevance``, best first."""


def theme_summaries(view: HistoryView, topics: Mapping[str, TopicRecord]) -> list[ThemeSummary]:
    """Every theme of the view, the most talked about first."""
    summaries: list[ThemeSummary] = []
    for theme in view.themes:
        units = [view.units[p] for p in theme.units]
        records = [view.turns[t] for unit in units for t in unit.turns]
        states = theme_states(view, theme)
        summaries.append(
            {
                "theme_id": theme.id,
                "theme": theme.name,
                "keywords": theme.keywords,
                "first": units[0].start if units else None,
                "last": units[-1].end if units else None,
                "units": len(units),
                "exchanges": len(records),
                "messages": sum(len(r["ids"]) for r in records),
                "states": len(states),
                "current": states[-1]["object"] if states else None,
                "topic_names": _topic_names(units, topics),
            }
        )
    return summaries


def find_theme(view: HistoryView, query: str, search: Search | None) -> tuple[Theme, str] | None:
    """The theme ``query`` names, else the one the search's best messages belong to."""
    wanted = {key_of(word) for word in words_of(query)}
    lowered = query.lower()
    best: tuple[float, float, Theme] | None = None
    for theme in view.themes:
        named = len(wanted & set(theme.keys))
        named += sum(1 for form in theme.keywords if len(form) >= 2 and form.lower() in lowered)
        if named and (best is None or (named, theme.weight) > best[:2]):
            best = (named, theme.weight, theme)
    if best is not None:
        return best[2], "theme"
    if search is None:
        return None
    unit_of = view.unit_of_turn()
    turn_of = {i: place for place, record in enumerate(view.turns) for i in record["ids"]}
    hit_units: dict[int, float] = {}
    for hit in search(query):
        if not _answers(hit, wanted):
            continue
        turn = turn_of.get(str(hit["message_id"]))
        if turn is not None:
            unit = unit_of[turn]
            relevance = hit.get("relevance", 0.0)
            score = float(relevance) if isinstance(relevance, int | float) else 0.0
            hit_units[unit] = hit_units.get(unit, 0.0) + score
    if not hit_units:
        return None
    total = sum(hit_units.values()) or 1.0
    scored = [(sum(hit_units.get(u, 0.0) for u in t.units), t.weight, t) for t in view.themes]
    scored = [s for s in scored if s[0] >= SEARCH_SHARE * total]
    if scored:
        return max(scored, key=lambda s: s[:2])[2], "search"
    top = max(hit_units.values())
    ranked = [u for u in sorted(hit_units, key=lambda u: -hit_units[u]) if hit_units[u] >= top / 3]
    ad_hoc = Theme(
        id="search",
        name=query.strip(),
        keys=sorted(wanted),
        keywords=[w for w in dict.fromkeys(words_of(query))],
        units=sorted(ranked[:5], key=lambda u: (view.units[u].start or "", u)),
    )
    return ad_hoc, "search"


def _answers(hit: Mapping[str, object], wanted: set[str]) -> bool:
    """Whether a hit is about the query: it shares a word with it, or it is very close.

    A search always returns its best messages, however far: "quantum chromodynamics" in a
    thread about bread must trace nothing.
    """
    relevance = hit.get("relevance", 0.0)
    if isinstance(relevance, int | float) and relevance >= CLOSE_HIT:
        return True
    snippet = hit.get("snippet", "")
    words = {key_of(word) for word in words_of(snippet if isinstance(snippet, str) else "")}
    return bool(words & wanted)


def trace_theme(
    view: HistoryView,
    theme: Theme,
    matched_by: Literal["theme", "search"],
    messages: Mapping[str, StoredMessage],
    topics: Mapping[str, TopicRecord],
) -> ThemeTrace:
    """The timeline of ``theme`` with quotes of ``messages`` (its units' messages)."""
    states = theme_states(view, theme, messages)
    by_unit: dict[str, list[StateChange]] = {}
    for state in states:
        by_unit.setdefault(state["unit_id"], []).append(state)
    timeline: list[TimelineEntry] = []
    count = len(theme.units)
    for number, place in enumerate(theme.units):
        unit = view.units[place]
        records = [view.turns[t] for t in unit.turns]
        ids = [i for record in records for i in record["ids"]]
        mark: Literal["first", "mention", "last", "only"] = (
            "only"
            if count == 1
            else "first"
            if number == 0
            else "last"
            if number == count - 1
            else "mention"
        )
        timeline.append(
            {
                "mark": mark,
                "unit_id": unit.id,
                "unit_kind": unit.kind,
                "bucket": unit.bucket,
                "start": unit.start,
                "end": unit.end,
                "topic_ids": list(unit.topics),
                "topic_names": _topic_names([unit], topics),
                "message_ids": ids,
                "summary": records[0]["summary"] if records else "",
                "states": by_unit.get(unit.id, []),
                "quotes": _quotes(ids, theme, messages),
            }
        )
    return {
        "theme_id": theme.id,
        "theme": theme.name,
        "keywords": theme.keywords,
        "matched_by": matched_by,
        "first": timeline[0]["start"] if timeline else None,
        "last": timeline[-1]["end"] if timeline else None,
        "current": states[-1]["object"] if states else None,
        "states": states,
        "timeline": timeline,
    }


def theme_states(
    view: HistoryView, theme: Theme, messages: Mapping[str, StoredMessage] | None = None
) -> list[StateChange]:
    """The theme's changes of state in time order; a choice restated is no change."""
    keys = set(theme.keys)
    changes: list[StateChange] = []
    holding: str | None = None
    for place in theme.units:
        unit = view.units[place]
        about = bool(keys & set(unit.headline)) or theme.id == "search"
        for turn in unit.turns:
            record = view.turns[turn]
            for signal in record.get("states", []):
                thing = key_of(signal["object"].split()[0]) if signal["object"] else ""
                if not about and thing not in keys:
                    continue
                if signal["kind"] != "dropped" and thing == holding:
                    continue  # "we're sticking with Postgres" changes nothing
                holding = None if signal["kind"] == "dropped" else thing
                stated = (messages or {}).get(signal["message_id"])
                sent = stated.get("timestamp") if stated is not None else None
                changes.append(
                    {
                        "kind": signal["kind"],
                        "object": signal["object"],
                        "time": sent or record.get("time"),
                        "message_id": signal["message_id"],
                        "message_ids": list(record["ids"]),
                        "unit_id": unit.id,
                        "quote": {
                            "message_id": signal["message_id"],
                            "role": stated["role"] if stated else "",
                            "timestamp": sent,
                            "text": clip(signal["sentence"], QUOTE_CHARS),
                        },
                    }
                )
    return changes


def _quotes(ids: Sequence[str], theme: Theme, messages: Mapping[str, StoredMessage]) -> list[Quote]:
    """The unit's messages naming the theme (the user's first), each by its naming sentence."""
    forms = [form.lower() for form in theme.keywords if form]
    found: list[tuple[int, Quote]] = []
    for order, message_id in enumerate(ids):
        message = messages.get(message_id)
        if message is None or message["role"] not in ("user", "assistant"):
            continue
        text = message_text(message)
        sentence = next(
            (s for s in split_sentences(text) if any(f in s.lower() for f in forms)), None
        )
        if sentence is None:
            continue
        rank = order if message["role"] == "user" else order + len(ids)
        found.append(
            (
                rank,
                {
                    "message_id": message_id,
                    "role": message["role"],
                    "timestamp": message.get("timestamp"),
                    "text": clip(sentence, QUOTE_CHARS),
                },
            )
        )
    if not found:  # the unit carries the theme by its embeddings or a folded word: its opening
        first = next((messages[i] for i in ids if i in messages), None)
        if first is not None:
            found.append(
                (
                    0,
                    {
                        "message_id": first["id"],
                        "role": first["role"],
                        "timestamp": first.get("timestamp"),
                        "text": clip(message_text(first), QUOTE_CHARS),
                    },
                )
            )
    return [quote for _, quote in sorted(found, key=lambda f: f[0])[:QUOTES_PER_ENTRY]]


def _topic_names(units: Sequence[Unit], topics: Mapping[str, TopicRecord]) -> list[str]:
    names: dict[str, None] = {}
    for unit in units:
        for topic_id in unit.topics:
            record = topics.get(topic_id)
            names.setdefault((record["name"] if record else "") or topic_id, None)
    return list(names)
