"""End of a turn: record scores, apply grey activation, put the tail to sleep (§4.7, §16)."""

from __future__ import annotations

from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from langgraph_topics.activation.grey import activation_threshold, decide_dormancy
from langgraph_topics.services import TopicContext, services_of, thread_id_of
from langgraph_topics.state.records import TopicRecord, TurnEvent
from langgraph_topics.state.schema import TopicState
from langgraph_topics.tuning.turn import log_turn


def bookkeeping(state: TopicState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Append this turn's scores to each topic's history and apply dormancy.

    A topic whose window failed this turn keeps its history unchanged (no score is invented).
    """
    services = services_of(runtime)
    settings = services.settings
    index = services.stores(thread_id_of(runtime)).topic_index
    results = state.get("topic_results") or {}
    now = services.clock().isoformat()
    topics: dict[str, TopicRecord] = {}
    active_count = sum(1 for t in (state.get("topics") or {}).values() if t["status"] == "active")
    bar = activation_threshold(active_count)
    for topic_id, record in (state.get("topics") or {}).items():
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
    decision = decide_dormancy(list(topics.values()), settings)
    events: list[TurnEvent] = []
    for topic_id, reason in decision.dormant.items():
        topics[topic_id] = {**topics[topic_id], "status": "dormant"}
        index.set_status(topic_id, "dormant")
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
    log_turn(services, thread_id_of(runtime), state, topics, events)
    return {"topics": topics, "events": events}
