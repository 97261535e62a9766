"""The topic index window's input (seed 000 §2–3, §4.7, §6.3).

The seed's index window reads three things: the briefs of the recently active topics, the
briefs the search found, and the time index. It is offered as many candidates as the rank
quota can take, with room to choose among them: few active topics → a large quota and many
candidates, many active → a small quota, and the floor of ``Settings.deep_search_k``
(which is what the window read before the quota sized it, so recall never drops).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping

from langgraph_topics.activation.grey import activation_quota
from langgraph_topics.errors import log_degraded
from langgraph_topics.roles.protocols import IndexWindow, TopicInfo
from langgraph_topics.roles.topic_info import topic_info
from langgraph_topics.settings import Settings
from langgraph_topics.state.records import TopicRecord
from langgraph_topics.stores.protocols import TopicStore
from langgraph_topics.tokens import TokenCounter

log = logging.getLogger(__name__)

CANDIDATES_PER_QUOTA = 2
"""Candidates offered per topic the quota may activate: the router chooses, not the index."""
DAY_TOPICS = 8
"""Topic names shown per day of the time index (a busy day says enough with its first ones)."""
MAX_DAYS = 60
"""Days of the time index shown at most, newest first, before the token budget applies."""


def candidate_count(active_count: int, settings: Settings, *, deep: bool) -> int:
    """How many index candidates the index window reads: sized by the rank quota (§4.7).

    Twice the quota, never fewer than the fixed count used before (``deep_search_k``, half of
    it on a normal search), and never more than ``max_active`` (twice that on a deep search):
    at three active topics a quota of 7 is offered 14 candidates, at eighteen one of 1 still six.
    """
    floor = settings.deep_search_k if deep else max(3, settings.deep_search_k // 2)
    cap = 2 * settings.max_active if deep else settings.max_active
    quota = activation_quota(active_count, settings, deep=deep)
    return max(floor, min(cap, CANDIDATES_PER_QUOTA * quota))


def index_window(
    topics: Mapping[str, TopicRecord],
    store: TopicStore,
    settings: Settings,
    counter: TokenCounter,
    *,
    exclude: Collection[str] = (),
) -> IndexWindow:
    """The recent briefs and the time index, within ``settings.index_window_tokens``.

    The recent briefs come first (most recently active first), then the days (newest first),
    each taken whole while it fits. ``exclude`` (the candidates) are not repeated.
    """
    budget = settings.index_window_tokens
    recent: list[TopicInfo] = []
    active = sorted(
        (t for t in topics.values() if t["status"] == "active" and t["id"] not in exclude),
        key=lambda t: t["last_active_at"],
        reverse=True,
    )
    for record in active:
        try:
            info = topic_info(store, record["id"], "active")
        except KeyError:  # its file is gone: nothing to show (``repair`` restores it)
            continue
        cost = counter(f"{info['id']} {info['name']} {info['brief']}") + 8
        if cost > budget:
            break
        budget -= cost
        recent.append(info)
    days: list[tuple[str, list[str]]] = []
    try:
        per_day = store.time_index()
    except Exception as error:  # the time index is derived data: the window goes without it
        log_degraded(log, "time index unreadable; the index window goes without it", error)
        per_day = {}
    for day in sorted(per_day, reverse=True)[:MAX_DAYS]:
        names = [topics[t]["name"] for t in per_day[day] if t in topics][:DAY_TOPICS]
        if not names:
            continue
        cost = counter(f"{day}: {'; '.join(names)}") + 2
        if cost > budget:
            break
        budget -= cost
        days.append((day, names))
    return {"recent": recent, "days": days}
