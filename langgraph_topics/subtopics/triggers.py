"""Which topics a split divides: those it grew past the limit, and those a provider refused.

Dividing happens in the split, the one step of a turn that writes topic files (seed 000 §4.4),
right after the messages went in: a topic is never read past its limit, and a topic whose
window prompt a provider refused as too long (a 400) is divided before the next turn reads it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from langgraph_topics.services import ThreadStores, TopicServices
from langgraph_topics.state.records import TopicRecord, TurnEvent
from langgraph_topics.subtopics.division import Division, divide_or_report
from langgraph_topics.subtopics.limits import part_cap, topic_limit
from langgraph_topics.summaries.topic_tokens import topic_tokens


def divide_large_topics(
    services: TopicServices,
    stores: ThreadStores,
    topics: dict[str, TopicRecord],
    *,
    touched: Collection[str],
    refused: Mapping[str, int],
) -> list[TurnEvent]:
    """Divide the touched topics grown past the limit and the refused ones; update ``topics``.

    Args:
        services: The thread's services.
        stores: Its stores, on the turn's branch.
        topics: The registry, updated in place with the divided topics and their children.
        touched: Topics the split just appended to.
        refused: Topics whose window prompt was refused as too long, with their tokens then.

    Returns:
        One event per division (or per division that could not be made).
    """
    limit = topic_limit(services.settings)
    store = stores.topic_store
    events: list[TurnEvent] = []
    plans: dict[str, tuple[int, str]] = {}
    for topic_id in touched:
        tokens = topic_tokens(store, topic_id, store.messages(topic_id), services.token_counter)
        if tokens > limit:
            plans[topic_id] = (part_cap(limit), f"{tokens:,} tokens, over the {limit:,} limit")
    for topic_id, tokens in refused.items():
        record = topics.get(topic_id)
        if record is not None and record["status"] not in ("split", "archived"):
            reason = f"its window's prompt was refused as too long at {tokens:,} tokens"
            plans[topic_id] = (part_cap(limit, tokens), reason)
    for topic_id, (cap, reason) in plans.items():
        outcome = divide_or_report(services, stores, topics, topic_id, cap=cap, reason=reason)
        if isinstance(outcome, Division):
            topics.update(outcome.records)
            events.extend(outcome.events)
        elif outcome is not None:
            events.append(outcome)
    return events
