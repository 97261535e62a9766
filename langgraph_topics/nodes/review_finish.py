"""Last step of a review: record what it did, and the store records it wrote, in the state."""

from __future__ import annotations

from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from langgraph_topics.review.actions import written_ranges
from langgraph_topics.review.clock import review_time
from langgraph_topics.services import TopicContext, services_of, thread_id_of
from langgraph_topics.state.records import ReviewRecord
from langgraph_topics.state.review import ReviewState


def review_finish(state: ReviewState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Record the review (``review``) and the branch's store ranges with the new registry.

    The checkpoint this run ends with is what makes the review's merges and briefs seen
    (``store_ranges``), as a split's checkpoint does for its appends: a crash before it leaves
    them unseen, and the thread as the last turn left it.
    """
    services = services_of(runtime)
    stores = services.branch_stores(thread_id_of(runtime), state)
    now = review_time(state, services.clock, services.settings.review_clock)
    merged = list(state.get("review_merged") or [])
    archived = list(state.get("review_archived") or [])
    topics = state.get("topics") or {}
    counts: dict[str, int] = {}
    for topic_id in topics:
        try:
            counts[topic_id] = stores.topic_store.meta(topic_id)["message_count"]
        except KeyError:
            continue
    record: ReviewRecord = {
        "at": now.isoformat(),
        "reviewed": counts,
        "rebriefed": list(dict.fromkeys(state.get("review_rebriefed") or [])),
        "merged": merged,
        "archived": archived,
        "kept": list(state.get("review_kept") or []),
        "digested": list(dict.fromkeys(state.get("review_digested") or [])),
    }
    get_stream_writer()({"event": "review", "merged": len(merged), "archived": len(archived)})
    return {**written_ranges(stores), "review": record, "review_now": None, "review_request": None}
