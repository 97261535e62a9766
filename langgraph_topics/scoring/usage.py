"""Usage counters of the topics, counted once per turn from what the turn did (seed 004 §2.3).

The seed keeps hot counters in memory and flushes them to an index now and then. Here the turn
is the flush: the counters are derived from the turn's own events and window in one step
(``bookkeeping``) and written with the turn's single checkpoint, so they cost no I/O of their
own, follow forks and time travel like the rest of the registry, and survive a crash exactly
as far as the turn does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from langgraph_topics.state.records import (
    AssembledContext,
    TopicRecord,
    TopicResult,
    TopicUsage,
    TurnEvent,
)

Counter = Literal["recalled", "searched", "referenced", "updated"]
COUNTERS: tuple[Counter, ...] = ("recalled", "searched", "referenced", "updated")


def turn_counts(
    events: Sequence[TurnEvent],
    results: Mapping[str, TopicResult],
    context: AssembledContext | None,
) -> dict[str, dict[Counter, int]]:
    """Each topic's counter increments for one turn (topic id → counter → increment).

    - ``recalled``: woken by the index this turn (an ``activated`` event not from the split);
    - ``searched``: a candidate of an index search (``index_search`` events);
    - ``referenced``: its result quoted messages in the main window;
    - ``updated``: the split added messages to it.
    """
    counts: dict[str, dict[Counter, int]] = {}

    def bump(topic_ids: Iterable[str], counter: Counter) -> None:
        for topic_id in dict.fromkeys(topic_ids):  # once per topic per event
            per_topic = counts.setdefault(topic_id, {})
            per_topic[counter] = per_topic.get(counter, 0) + 1

    for event in events:
        ids = event.get("topic_ids") or []
        if event["kind"] == "activated" and event.get("reason") != "split":
            bump(ids, "recalled")
        elif event["kind"] == "index_search":
            bump(ids, "searched")
        elif event["kind"] == "split":
            bump(ids, "updated")
    if context is not None:
        quoted = [
            topic_id
            for topic_id in context["topic_ids"]
            if topic_id in results and results[topic_id]["referenced_message_ids"]
        ]
        bump(quoted, "referenced")
    return counts


def with_counts(record: TopicRecord, increments: Mapping[Counter, int]) -> TopicRecord:
    """``record`` with its usage counters raised by ``increments`` (a new record).

    ``record`` itself when nothing is raised: every turn passes each topic of the registry
    through here, and most have nothing to count (hundreds of copies a turn in a long thread).
    """
    if not any(increments.values()):
        return record
    usage: TopicUsage = {**(record.get("usage") or {})}
    for counter, step in increments.items():
        if step:
            usage[counter] = usage.get(counter, 0) + step
    return {**record, "usage": usage} if usage else record


def merged_usage(first: TopicRecord, second: TopicRecord) -> TopicUsage:
    """Combine the usage of two topics merged into one.

    Counters are added, the topic is pinned if either was and keeps the higher rating: a
    review's merge keeps both topics' histories, so it keeps both topics' use too.
    """
    one, two = first.get("usage") or {}, second.get("usage") or {}
    usage: TopicUsage = {}
    for counter in COUNTERS:
        total = one.get(counter, 0) + two.get(counter, 0)
        if total:
            usage[counter] = total
    if one.get("pinned") or two.get("pinned"):
        usage["pinned"] = True
    rating = max(one.get("rating", 0), two.get("rating", 0))
    if rating:
        usage["rating"] = rating
    return usage
