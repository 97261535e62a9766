"""Which topics a split divides: those it grew past the limit, and those a provider refused.

Dividing happens in the split, the one step of a turn that writes topic files (seed 000 §4.4),
right after the messages went in: a topic is never read past its limit, and a topic whose
window prompt a provider refused as too long (a 400) is divided before the next turn reads it.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping

from langgraph_topics.errors import log_degraded
from langgraph_topics.services import ThreadStores, TopicServices
from langgraph_topics.state.records import TopicRecord, TurnEvent
from langgraph_topics.subtopics.division import divide_topic
from langgraph_topics.subtopics.limits import part_cap, topic_limit
from langgraph_topics.summaries.topic_tokens import topic_tokens

log = logging.getLogger(__name__)


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
    if limit is not None:
        for topic_id in touched:
            messages = store.messages(topic_id)
            tokens = topic_tokens(store, topic_id, messages, services.token_counter)
            if tokens > limit:
                reason = f"{tokens:,} tokens, over the {limit:,} limit"
                plans[topic_id] = (part_cap(limit), reason)
    for topic_id, tokens in refused.items():
        record = topics.get(topic_id)
        if record is not None and record["status"] not in ("split", "archived"):
            reason = f"its window's prompt was refused as too long at {tokens:,} tokens"
            plans[topic_id] = (part_cap(limit, tokens), reason)
    for topic_id, (cap, reason) in plans.items():
        try:
            division = divide_topic(services, stores, topics, topic_id, cap=cap, reason=reason)
        except Exception as error:
            # split_topic checks everything before it writes and writes its record last: a
            # failure up to it leaves the topic whole (one after it, the division reports).
            log_degraded(log, f"could not divide {topic_id} into subtopics; it stays whole", error)
            events.append(
                {
                    "kind": "degraded",
                    "topic_ids": [topic_id],
                    "detail": f"subtopics of {topic_id} not made: {error}",
                }
            )
            continue
        if division is not None:
            topics.update(division.records)
            events.extend(division.events)
    return events
