"""Archive or restore one topic by request (``langgraph-topics archive`` / ``restore``)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from langgraph_topics.errors import InputError
from langgraph_topics.review.actions import archive, restore, written_ranges
from langgraph_topics.review.clock import review_time
from langgraph_topics.services import TopicContext, services_of, thread_id_of
from langgraph_topics.state.records import ArchiveRecord, TopicRecord, TurnEvent
from langgraph_topics.state.review import ReviewState

BY_REQUEST = "by request"


def review_request(state: ReviewState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Archive a topic (filed as a review would file it) or bring an archived one back.

    Idempotent: archiving an archived topic or restoring one that is not archived changes
    nothing. A restored topic comes back dormant, dated now (``review.actions.restore``).

    Raises:
        InputError: The thread has no such topic (one line naming it), before any write.
    """
    request = state.get("review_request")
    if request is None:
        raise InputError("review_request: no topic to archive or restore")
    services = services_of(runtime)
    stores = services.branch_stores(thread_id_of(runtime), state)
    topics: dict[str, TopicRecord] = dict(state.get("topics") or {})
    topic_id = request["topic_id"]
    record = topics.get(topic_id)
    if record is None:
        raise InputError(f"thread {thread_id_of(runtime)!r} has no topic {topic_id!r}")
    now = review_time(state, services.clock, services.settings.review_clock)
    events: list[TurnEvent] = []
    filed: list[ArchiveRecord] = []
    if request["action"] == "archive" and record["status"] != "archived":
        topics[topic_id], entry = archive(services, stores, record, BY_REQUEST, now)
        filed.append(entry)
        events.append(
            {
                "kind": "archived",
                "topic_ids": [topic_id],
                "reason": BY_REQUEST,
                "detail": f"{record['name']} filed under {entry['month']}",
            }
        )
    elif request["action"] == "restore" and record["status"] == "archived":
        topics[topic_id] = restore(stores, record, now)
        events.append(
            {
                "kind": "restored",
                "topic_ids": [topic_id],
                "reason": BY_REQUEST,
                "detail": f"{record['name']} is dormant again",
            }
        )
    return {
        **written_ranges(stores),
        "topics": topics,
        "events": Overwrite(events),
        "review_rebriefed": Overwrite([]),
        "review_merged": Overwrite([]),
        "review_archived": Overwrite(filed),
        "review_kept": Overwrite([]),
        "review_digested": Overwrite([]),
        "review_now": None,
        "review_request": None,
    }
