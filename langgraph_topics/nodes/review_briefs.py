"""Review step 1: refresh the briefs of the topics touched since the last review (§4.8)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from langgraph_topics.review.actions import refresh_brief, reviewable, written_ranges
from langgraph_topics.review.clock import review_time
from langgraph_topics.services import TopicContext, services_of, thread_id_of
from langgraph_topics.state.records import TopicRecord, TurnEvent
from langgraph_topics.state.review import ReviewState


def review_briefs(state: ReviewState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Rewrite, from all their messages, the briefs of topics whose size changed since.

    The same write compresses each such topic's new messages, day by day, into its card
    (``review.day_digests``): the review is the only place this runs, never a turn.

    It also fixes the time the whole review judges by (``review_now``: as given, else the
    thread's own clock, ``review.clock``).
    A topic is touched when its message count differs from the one the last review recorded
    (``review.reviewed``), or it was never reviewed: counts, not clocks, so that ``--now`` and
    the review's own brief writes cannot make an unchanged topic look touched. Archived topics
    are left as they were filed.

    First, a registered topic the store reports merged into another (a thread whose
    checkpoints predate ``store_ranges`` reads every record, so a merge a crash cut short
    before its checkpoint shows there) leaves the registry: the store is the durable side.
    """
    services = services_of(runtime)
    # A bad --now is refused here, before anything is written.
    now = review_time(state, services.clock, services.settings.review_clock)
    stores = services.branch_stores(thread_id_of(runtime), state)
    store = reviewable(stores)
    topics: dict[str, TopicRecord] = dict(state.get("topics") or {})
    events: list[TurnEvent] = []
    for topic_id in list(topics):
        try:
            target = store.merged_into(topic_id)
        except KeyError:  # registered but not in the store (its file is gone): left alone
            continue
        if target is not None:
            del topics[topic_id]
            events.append(
                {
                    "kind": "reconciled",
                    "topic_ids": [topic_id, target],
                    "detail": f"{topic_id} was merged into {target}: registry follows the store",
                }
            )
    last = state.get("review")
    reviewed: dict[str, int] = last["reviewed"] if last else {}
    rebriefed: list[str] = []
    digested: list[str] = []
    today = now.date().isoformat()
    for topic_id, record in topics.items():
        if record["status"] in ("archived", "split"):  # a divided topic's brief lists children
            continue
        try:
            count = stores.topic_store.meta(topic_id)["message_count"]
        except KeyError:
            continue
        if reviewed.get(topic_id) == count:
            continue
        since = min(reviewed.get(topic_id, 0), count)
        outcome = refresh_brief(
            services, stores, topic_id, record["status"], since=since, today=today
        )
        if outcome.error is not None:
            events.append(
                {"kind": "degraded", "detail": f"brief of {topic_id} kept: {outcome.error}"}
            )
        if outcome.changed:
            rebriefed.append(topic_id)
            topics[topic_id] = {**record, "name": outcome.name}
        if outcome.digested:
            digested.append(topic_id)
    if rebriefed:
        events.append(
            {
                "kind": "rebriefed",
                "topic_ids": rebriefed,
                "detail": f"{len(rebriefed)} briefs refreshed",
            }
        )
    if digested:
        events.append(
            {
                "kind": "digested",
                "topic_ids": digested,
                "detail": f"the days since the last review compressed into {len(digested)} cards",
            }
        )
    return {
        **written_ranges(stores),
        "review_now": now.isoformat(),
        "topics": topics,
        "events": Overwrite(events),
        "review_rebriefed": Overwrite(rebriefed),
        "review_merged": Overwrite([]),
        "review_archived": Overwrite([]),
        "review_kept": Overwrite([]),
        "review_digested": Overwrite(digested),
    }
