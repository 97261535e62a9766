"""The active cap after an import (seed 000 §4.7: 3–20 active topics at every moment).

An import splits turn after turn without a question, and every split activates the topics it
touched: a 100k-token import left 47 active, and the first turn read them all. At the end of
an import the registry is brought back within ``max_active`` (``grey.over_the_cap``: the most
recently active stay), as a checkpoint of its own, so the first turn after it costs what any
other turn costs. A turn's bookkeeping holds the same bound (``grey.decide_dormancy``), and
the fan-out never reads past it (``fan_out_plan.over_max_active``), so a registry that came
from elsewhere (a migration copies checkpoints as they were) is read within it too. A split
written after a turn's reply (a ``split`` run, which has no bookkeeping) caps as it writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langgraph_topics.activation.grey import over_the_cap
from langgraph_topics.settings import Settings
from langgraph_topics.state.records import TopicRecord, TurnEvent
from langgraph_topics.stores.protocols import TopicIndex

if TYPE_CHECKING:
    from langgraph_topics.memory import TopicMemory


def cap_after_import(memory: TopicMemory, thread_id: str) -> list[str]:
    """Put the active topics past ``max_active`` to sleep; returns their ids.

    The caller holds the thread's writer and file locks (``TopicMemory.import_messages``).
    The index learns the statuses first, then the registry (as a turn's bookkeeping does):
    a crash between the two leaves a topic the index calls dormant active for one more turn,
    which that turn's bookkeeping caps again.
    """
    state = memory.state(thread_id)
    topics: dict[str, TopicRecord] = dict(state.get("topics") or {})
    index = memory.services.branch_stores(thread_id, state).topic_index
    events = sleep_over_cap(topics, memory.settings, index, "after an import")
    if not events:
        return []
    # As the end of a turn would: the next turn starts from it, nothing is pending.
    memory.graph.update_state(
        memory.run_config(thread_id), {"topics": topics, "events": events}, as_node="bookkeeping"
    )
    return [t for e in events for t in e.get("topic_ids", [])]


def sleep_over_cap(
    topics: dict[str, TopicRecord], settings: Settings, index: TopicIndex, when: str
) -> list[TurnEvent]:
    """Put the active topics of ``topics`` past ``max_active`` to sleep, in place; their events.

    The index learns each status before the registry does (the caller writes the registry).
    """
    events: list[TurnEvent] = []
    for topic_id, reason in over_the_cap(list(topics.values()), settings).items():
        previous = topics[topic_id]["status"]
        asleep: TopicRecord = {**topics[topic_id], "status": "dormant"}
        asleep.pop("low_rounds", None)
        topics[topic_id] = asleep
        index.set_status(topic_id, "dormant", previous=previous)
        events.append(
            {
                "kind": "dormant",
                "topic_ids": [topic_id],
                "reason": f"{when}: {reason}",
                "detail": f"{asleep['name']}: {when}, {reason}",
            }
        )
    return events
