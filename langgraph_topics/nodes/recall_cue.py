"""Recall before the topic windows: explicit requests (§4.7 path 3, §4.8), and the evidence.

A recall cue ("you forgot?", "我之前说过") and a date query ("what did we talk about in
March?") both start a deep index search before the topic windows run. Without one, a sleeping
topic that holds the question's best evidence wakes at once (``activation/evidence_wake.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date, datetime
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from langgraph_topics.activation.date_periods import DatePeriod
from langgraph_topics.activation.date_query import find_date_query
from langgraph_topics.activation.dated_topics import asked_periods
from langgraph_topics.activation.evidence_wake import sleeping_with_evidence
from langgraph_topics.activation.recall_cues import find_recall_cue
from langgraph_topics.retrieval.period_evidence import lived_in, thread_times
from langgraph_topics.retrieval.turn_evidence import turn_evidence
from langgraph_topics.scoring import archive_tier
from langgraph_topics.services import TopicContext, services_of, thread_id_of
from langgraph_topics.state.messages import TIMESTAMP_KEY, text_of
from langgraph_topics.state.records import ActivationRequest, TurnEvent
from langgraph_topics.state.schema import TopicState
from langgraph_topics.state.turn_records import turn_records
from langgraph_topics.state.working_set import stored_view, unsplit_messages
from langgraph_topics.subtopics.families import prior_families


def latest_user_text(state: TopicState) -> str:
    """Text of the newest user message of the working set ('' when there is none)."""
    for message in reversed(state["messages"]):
        if isinstance(message, HumanMessage):
            return text_of(message)
    return ""


def reference_day(state: TopicState, clock: Callable[[], datetime]) -> date:
    """The day "last week" is counted from: the newest user message's own, else the clock's.

    An imported or replayed conversation carries its send times; "yesterday" then means the
    day before that message was sent, not before the turn runs.
    """
    for message in reversed(state["messages"]):
        if isinstance(message, HumanMessage):
            sent = message.additional_kwargs.get(TIMESTAMP_KEY)
            if isinstance(sent, str):
                try:
                    return datetime.fromisoformat(sent).date()
                except ValueError:
                    pass
            break
    return clock().date()


def recall_cue(state: TopicState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Request a deep index search, without asking the user, on a recall cue or date query."""
    if not state.get("topics"):
        return {}
    text = latest_user_text(state)
    cue = find_recall_cue(text)
    query = find_date_query(text, reference_day(state, services_of(runtime).clock))
    if cue is None and query is None:
        return wake_by_evidence(state, runtime)
    request: ActivationRequest = {
        "query": text,
        "reason": "recall_cue" if cue is not None else "date_query",
        "deep": True,
    }
    events: list[TurnEvent] = []
    writer = get_stream_writer()
    if cue is not None:
        events.append({"kind": "recall_cue", "detail": f"cue {cue!r}: deep index search"})
        writer({"event": "recall_cue", "cue": cue})
    if query is not None:
        request["periods"] = asked_periods(_lived(query.periods, state, runtime))
        events.append(
            {
                "kind": "date_query",
                "detail": f"{query.asks!r} about {query.describe()}: topics of the period",
            }
        )
        writer({"event": "date_query", "periods": request["periods"]})
    return {"activation": request, "events": events}


def _lived(
    periods: Sequence[DatePeriod], state: TopicState, runtime: Runtime[TopicContext]
) -> list[DatePeriod]:
    """The periods, a yearless date in the latest year the thread has messages in it."""
    if not any(period.yearless for period in periods):
        return list(periods)
    services = services_of(runtime)
    stores = services.branch_stores(thread_id_of(runtime), state)
    unsplit = unsplit_messages(stored_view(state["messages"]), stores.topic_store)
    return lived_in(periods, thread_times(stores.message_index, unsplit))


def wake_by_evidence(state: TopicState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Wake the sleeping topics that hold the question's best evidence (no model call).

    At most one per best message (``BEST_MESSAGES``), whatever the active count: the fan-out
    reads the topics woken this turn first, and the bookkeeping puts the weakest past
    ``max_active`` to sleep. Archive-tier topics wait for an explicit request, as they do for
    the index (seed 004 §2.2).
    """
    topics = state.get("topics") or {}
    services = services_of(runtime)
    settings = services.settings
    if not settings.wake_by_evidence or not any(t["status"] == "dormant" for t in topics.values()):
        return {}
    thread_id = thread_id_of(runtime)
    stores = services.branch_stores(thread_id, state)
    evidence = turn_evidence(
        services, stores, turn_records(state["messages"]), prior_families(topics)
    )
    found = sleeping_with_evidence(evidence, topics)
    if found:
        # Only the found topics are scored: scoring the whole registry grew with the thread.
        resting = archive_tier(
            {t: topics[t] for t in found}, services.clock(), settings.score_decay_days
        )
        found = [t for t in found if t not in resting]
    if not found:
        return {}
    now = services.clock().isoformat()
    woken = dict(topics)
    for topic_id in found:
        woken[topic_id] = {**topics[topic_id], "status": "active", "last_active_at": now}
        stores.topic_index.set_status(topic_id, "active", previous=topics[topic_id]["status"])
    event: TurnEvent = {
        "kind": "activated",
        "reason": "evidence",
        "topic_ids": found,
        "detail": "; ".join(f"{t}: holds one of the question's best messages" for t in found),
    }
    get_stream_writer()({"event": "activated", "reason": "evidence", "topics": found})
    return {"topics": woken, "events": [event]}
