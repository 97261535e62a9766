"""Review step 3: archive long-dormant topics and one-off questions (seed 000 §4.8, §7, §9)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from langgraph_topics.review.actions import archive, written_ranges
from langgraph_topics.review.clock import review_time
from langgraph_topics.review.criteria import ArchiveGuard, TierGuard, archive_reason
from langgraph_topics.review.relatedness import RELATED_TO_NOW, CurrentDiscussion, current_pieces
from langgraph_topics.services import TopicContext, services_of, thread_id_of
from langgraph_topics.state.records import (
    ArchiveRecord,
    KeptRecord,
    TopicMeta,
    TopicRecord,
    TurnEvent,
)
from langgraph_topics.state.review import ReviewState


def review_archive(state: ReviewState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Archive every topic the criteria (``review.criteria``) pick, unless the guard keeps it.

    Without a guard of the caller's, ``TierGuard`` keeps pinned and core-tier topics. A topic
    the criteria pick that is related to the current discussion (``review.relatedness``) stays
    as it is, with a ``kept`` event and an entry in the review's ``kept``: seed 000 §4.8 archives
    a topic only when it is also unrelated to what is being discussed now.

    An archived topic keeps all its messages in its file; its compressed summary is filed by
    month (``topics/archived/YYYY-MM/``), the topic index marks it archived, and normal
    activation no longer offers it: only a recall cue naming it or ``restore`` brings it back.
    """
    services = services_of(runtime)
    settings = services.settings
    stores = services.branch_stores(thread_id_of(runtime), state)
    now = review_time(state, services.clock, services.settings.review_clock)
    guard = getattr(runtime.context, "archive_guard", None) or TierGuard(settings.score_decay_days)
    topics: dict[str, TopicRecord] = dict(state.get("topics") or {})
    events: list[TurnEvent] = []
    archived: list[ArchiveRecord] = []
    kept_now: list[KeptRecord] = []
    metas: dict[str, TopicMeta] = {}
    for topic_id in topics:
        try:
            metas[topic_id] = stores.topic_store.meta(topic_id)
        except KeyError:  # registered but not in the store: nothing to file
            continue
    discussion: CurrentDiscussion | None = None  # embedded once a topic is a candidate
    for topic_id, record in list(topics.items()):
        if record["status"] in ("archived", "split") or topic_id not in metas:
            continue
        meta = metas[topic_id]
        small = meta["message_count"] <= settings.one_off_messages
        messages = stores.topic_store.messages(topic_id) if small else None
        reason = archive_reason(record, messages, now, settings)
        if reason is None:
            continue
        kept = guard.keeps(record, now) if isinstance(guard, ArchiveGuard) else None
        if kept is not None:
            continue
        if discussion is None:
            pieces = current_pieces(topics, metas, state.get("messages") or [], now, settings)
            discussion = CurrentDiscussion(pieces, services.embedder)
        near = discussion.nearest(meta, exclude=topic_id)
        if near is not None and near.similarity >= RELATED_TO_NOW:
            why = (
                f"{reason}, but related to the current discussion "
                f"({near.label}: {near.similarity:.2f})"
            )
            kept_now.append({"topic_id": topic_id, "reason": why})
            events.append(
                {
                    "kind": "kept",
                    "topic_ids": [topic_id],
                    "reason": why,
                    "detail": f"{record['name']} stays {record['status']}",
                }
            )
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
        return {"events": events, "review_kept": kept_now} if kept_now else {}
    return {
        **written_ranges(stores),
        "topics": topics,
        "events": events,
        "review_archived": archived,
        "review_kept": kept_now,
    }
