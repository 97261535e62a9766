"""End of a turn: scores, usage counters, grey activation and dormancy (§4.7, §16)."""

from __future__ import annotations

from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from langgraph_topics.activation.governor import UNREACHED_REASONS
from langgraph_topics.activation.grey import activation_threshold, decide_dormancy
from langgraph_topics.links.quoted_together import link_quoted_together
from langgraph_topics.review.actions import written_ranges
from langgraph_topics.scoring import core_topics, turn_counts, with_counts
from langgraph_topics.services import TopicContext, services_of, thread_id_of
from langgraph_topics.state.records import TopicRecord, TurnEvent
from langgraph_topics.state.schema import TopicState
from langgraph_topics.tuning.turn import log_turn


def bookkeeping(state: TopicState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Append this turn's scores and usage to each topic's record and apply dormancy.

    A topic whose window failed this turn keeps its history unchanged (no score is invented).
    One the governor gave no model call (``activation/governor.py``) is scored by its native
    reading, as in a memory without models; one read by nothing (past ``max_active``) keeps
    its history, and a skip for its evidence then counts as a round at risk of dormancy.
    Dormancy is conservative: a topic falls asleep only after ``Settings.dormancy_rounds``
    scored rounds at risk, and never in the turn that activated it (seed 000 §15.6). Topics
    the window quoted together are linked (``links.quoted_together``), and a new link's record
    joins the branch's ``store_ranges`` as a split's do.
    """
    services = services_of(runtime)
    settings = services.settings
    thread_id = thread_id_of(runtime)
    stores = services.stores(thread_id)
    index = stores.topic_index
    results = state.get("topic_results") or {}
    turn_events = state.get("events") or []
    clock = services.clock()
    now = clock.isoformat()
    counts = turn_counts(turn_events, results, state.get("context"))
    topics: dict[str, TopicRecord] = {}
    active_count = sum(1 for t in (state.get("topics") or {}).values() if t["status"] == "active")
    bar = activation_threshold(active_count)
    for topic_id, record in (state.get("topics") or {}).items():
        record = with_counts(record, counts.get(topic_id, {}))
        result = results.get(topic_id)
        if result is None or record["status"] != "active":
            topics[topic_id] = record
            continue
        score = result["relevance_score"]
        topics[topic_id] = {
            **record,
            "scores": [*record["scores"], score][-settings.score_window :],
            "last_active_at": now if score >= bar else record["last_active_at"],
        }
    # Woken this turn (by the split or the index): not put back to sleep before it is used.
    woken = {t for e in turn_events if e["kind"] == "activated" for t in e.get("topic_ids", [])}
    # Only active topics can fall asleep: scoring the whole registry would grow with it.
    active = {topic_id: t for topic_id, t in topics.items() if t["status"] == "active"}
    core = core_topics(active, clock, decay_days=settings.score_decay_days)
    # Skipped by the governor for their evidence: no score, but a round at risk (grey.py).
    unreached = {
        t
        for e in turn_events
        if e["kind"] == "skipped" and e.get("reason") in UNREACHED_REASONS
        for t in e.get("topic_ids", [])
    }
    decision = decide_dormancy(
        list(topics.values()),
        settings,
        scored=set(results),
        protected=woken,
        core=core,
        unreached=unreached - set(results),
    )
    for topic_id, rounds in decision.low_rounds.items():
        record = {**topics[topic_id], "low_rounds": rounds}
        if not rounds:
            del record["low_rounds"]  # sparse: most topics are not at risk
        topics[topic_id] = record
    events: list[TurnEvent] = []
    for topic_id, reason in decision.dormant.items():
        previous = topics[topic_id]["status"]
        asleep: TopicRecord = {**topics[topic_id], "status": "dormant"}
        asleep.pop("low_rounds", None)  # a woken topic starts a new stretch
        topics[topic_id] = asleep
        index.set_status(topic_id, "dormant", previous=previous)
        events.append(
            {
                "kind": "dormant",
                "topic_ids": [topic_id],
                "reason": reason,
                "detail": f"{topics[topic_id]['name']}: {reason}",
            }
        )
    if decision.dormant:
        get_stream_writer()({"event": "dormant", "topics": list(decision.dormant)})
    log_turn(services, thread_id, state, topics, events)
    update: dict[str, Any] = {"topics": topics, "events": events}
    if link_quoted_together(stores.topic_store, state.get("context"), results):
        update.update(written_ranges(stores))  # the link records are the branch's
    return update
