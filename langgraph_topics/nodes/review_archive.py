"""Review step 3: archive long-dormant topics and one-off questions (seed 000 §4.8, §7, §9)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from langgraph_topics.review.actions import archive, written_ranges
from langgraph_topics.review.clock import review_time
from langgraph_topics.review.criteria import ArchiveGuard, TierGuard, archive_reason
from langgraph_topics.services import TopicContext, services_of, thread_id_of
from langgraph_topics.state.records import ArchiveRecord, TopicRecord, TurnEvent
from langgraph_topics.state.review import ReviewState


def review_archive(state: ReviewState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Archive every topic the criteria (``review.criteria``) pick, unless the guard keeps it.

    Without a guard of the caller's, ``TierGuard`` keeps pinned and core-tier topics.

    An archived topic keeps all its messages in its file; its compressed summary is filed by
    month (``topics/archived/YYYY-MM/``), the topic index marks it archived, and normal
    activation no longer offers it: only a recall cue naming it or ``restore`` brings it back.
    """
    services = services_of(runtime)
    settings = services.settings
    stores = services.branch_stores(thread_id_of(runtime), state)
    now = review_time(state.get("review_now"), services.clock)
    guard = getattr(runtime.context, "archive_guard", None) or TierGuard(settings.score_decay_days)
    topics: dict[str, TopicRecord] = dict(state.get("topics") or {})
    events: list[TurnEvent] = []
    archived: list[ArchiveRecord] = []
    for topic_id, record in list(topics.items()):
        if record["status"] in ("archived", "split"):
            continue
        try:
            meta = stores.topic_store.meta(topic_id)
        except KeyError:  # registered but not in the store: nothing to file
            continue
        small = meta["message_count"] <= settings.one_off_messages
        messages = stores.topic_store.messages(topic_id) if small else None
        reason = archive_reason(record, messages, now, settings)
        if reason is None:
            continue
        kept = guard.keeps(record, now) if isinstance(guard, ArchiveGuard) else None
        if kept is not None:
            continue
        topics[topic_id], filed = archive(services, stores, record, reason, now)
        events.append(
            {
                "kind": "archived",
                "topic_ids": [topic_id],
                "reason": reason,
                "detail": f"{record['name']} filed under {filed['month']}",
            }
        )
        archived.append(filed)
    if not archived:
        return {}
    return {
        **written_ranges(stores),
        "topics": topics,
        "events": events,
        "review_archived": archived,
    }
