"""Split the older unsplit messages into topics (seed 000 §4.4, §6.4)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import RemoveMessage
from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from langgraph_topics.errors import log_degraded
from langgraph_topics.roles.protocols import SplitPlan, TopicInfo
from langgraph_topics.roles.topic_info import topic_info, topic_infos
from langgraph_topics.services import TopicContext, services_of, thread_id_of
from langgraph_topics.state.records import StoredMessage, TurnEvent
from langgraph_topics.state.schema import TopicState
from langgraph_topics.state.units import group_units, split_point, unit_in_store
from langgraph_topics.state.working_set import stored_view, unsplit_messages
from langgraph_topics.stores.protocols import BranchedTopicStore, TopicStore
from langgraph_topics.stores.seq_ranges import as_state
from langgraph_topics.subtopics.triggers import divide_large_topics
from langgraph_topics.summaries.briefs import brief_card, write_brief
from langgraph_topics.summaries.card import SummaryCard
from langgraph_topics.tuning.turn import log_turn

log = logging.getLogger(__name__)

Destination = tuple[str, str]
"""``("topic", topic_id)`` or ``("new", key)``."""


def resolve_plan(
    plan: SplitPlan, units: Sequence[Sequence[StoredMessage]], known_topics: set[str]
) -> tuple[list[Destination], list[str]]:
    """One destination per unit, whatever the splitter returned; plus what had to be mended.

    A unit goes where its first validly assigned message goes (units are never separated).
    Unknown topic ids, unknown new-topic keys and unassigned units are mended: such a unit
    follows the unit before it (conversation continuity), or opens an "unsorted" topic.
    """
    new_keys = {topic["key"] for topic in plan["new_topics"]}
    by_message: dict[str, Destination] = {}
    problems: list[str] = []
    for assignment in plan["assignments"]:
        destination: Destination | None = None
        if assignment["topic_id"] is not None:
            if assignment["topic_id"] in known_topics:
                destination = ("topic", assignment["topic_id"])
            else:
                problems.append(f"unknown topic id {assignment['topic_id']!r}")
        elif assignment["new_key"] is not None:
            if assignment["new_key"] in new_keys:
                destination = ("new", assignment["new_key"])
            else:
                problems.append(f"unknown new-topic key {assignment['new_key']!r}")
        if destination is None:
            continue
        for message_id in assignment["message_ids"]:
            if message_id in by_message:
                problems.append(f"message {message_id} assigned twice (first kept)")
            else:
                by_message.setdefault(message_id, destination)
    destinations: list[Destination] = []
    for unit in units:
        chosen = next((by_message[m["id"]] for m in unit if m["id"] in by_message), None)
        if chosen is None:
            problems.append(f"unit starting at {unit[0]['id']} unassigned")
            chosen = destinations[-1] if destinations else ("new", "__unsorted__")
        destinations.append(chosen)
    return destinations, problems


def split(state: TopicState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Move the unsplit messages older than the last ``keep_recent`` into topics.

    Messages are appended to the topic store first and leave the working set only afterwards,
    in the same checkpoint that records the new records as this branch's (``store_ranges``).
    A crash in between leaves records no checkpoint owns: unseen, while the messages are still
    in the working set, to be split again. Nothing is lost, nothing is seen twice.
    """
    services = services_of(runtime)
    thread_id = thread_id_of(runtime)
    stores = services.branch_stores(thread_id, state)
    store = stores.topic_store
    unsplit = unsplit_messages(stored_view(state["messages"]), store)
    cut = split_point(unsplit, services.settings.keep_recent)
    candidates = unsplit[:cut]
    refused = state.get("oversized_topics") or {}
    if not candidates:
        event: TurnEvent = {"kind": "split", "detail": "nothing older than the recent messages"}
        if not refused:
            return {"events": [event]}
        topics = dict(state.get("topics") or {})
        divided = divide_large_topics(services, stores, topics, touched=(), refused=refused)
        return {
            **_ranges_of(store),
            "topics": topics,
            "events": [event, *divided],
            "oversized_topics": Overwrite({}),
        }

    units = group_units(candidates)
    topics = dict(state.get("topics") or {})
    infos = topic_infos(topics, store)
    _mark_latest_unit(infos, store, state.get("last_split_id"))
    events: list[TurnEvent] = []
    try:
        plan = services.roles.splitter.split(units, infos)
    except Exception as error:  # a failing back end must not lose the turn
        log_degraded(log, "splitter failed; every unit falls back to one unsorted topic", error)
        events.append({"kind": "degraded", "detail": f"splitter failed: {error}"})
        plan = {"assignments": [], "new_topics": []}
    destinations, problems = resolve_plan(plan, units, {i["id"] for i in infos})
    if problems:
        events.append(
            {
                "kind": "degraded",
                "detail": "split plan mended: "
                + "; ".join(problems[:5])
                + (f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""),
            }
        )

    new_topics = {t["key"]: t for t in plan["new_topics"]}
    created: dict[str, str] = {}
    briefed: set[str] = set()
    grouped: dict[str, list[StoredMessage]] = {}
    for unit, (kind, key) in zip(units, destinations, strict=True):
        if kind == "new" and key not in created:
            spec = new_topics.get(key, {"key": key, "name": "", "brief": ""})
            first = unit[0].get("timestamp")
            meta = store.create_topic(spec["name"] or "Unsorted", spec["brief"], created_at=first)
            created[key] = meta["id"]
            if spec["name"] and spec["brief"]:
                briefed.add(meta["id"])
            events.append(
                {"kind": "topic_created", "detail": meta["name"], "topic_ids": [meta["id"]]}
            )
        topic_id = created[key] if kind == "new" else key
        grouped.setdefault(topic_id, []).extend(unit)

    turn_time = candidates[-1].get("timestamp") or services.clock().isoformat()
    activated: list[str] = []
    for topic_id, messages in grouped.items():
        store.append(topic_id, messages)
        info = topic_info(store, topic_id, "active")
        card: SummaryCard | None
        if topic_id in briefed:
            # The splitter wrote this new topic's brief from exactly these messages (§6.4).
            name, brief = info["name"], info["brief"]
            card = brief_card(messages, name, brief, services.token_counter)
            store.set_brief(topic_id, name, brief, card=card)
        else:
            try:
                name, brief, card = write_brief(
                    services.roles.brief_writer,
                    info,
                    store.messages(topic_id),
                    services.token_counter,
                )
            except Exception as error:
                log_degraded(
                    log, f"brief writer failed for {topic_id}; keeping the previous brief", error
                )
                events.append({"kind": "degraded", "detail": f"brief for {topic_id} kept: {error}"})
                name, brief = info["name"], info["brief"]
                card = store.meta(topic_id).get("brief_card")
            store.set_brief(topic_id, name, brief, card=card)
        stores.topic_index.upsert(topic_id, name, brief, status="active")
        meta = store.meta(topic_id)
        previous = topics.get(topic_id)
        if previous is None or previous["status"] != "active":
            activated.append(topic_id)
        topics[topic_id] = {
            "id": topic_id,
            "name": name,
            "status": "active",
            "parent_id": meta["parent_id"],
            "scores": previous["scores"] if previous else [],
            "created_at": meta["created_at"],
            "last_active_at": turn_time,
            "message_count": meta["message_count"],
        }
        if previous and "usage" in previous:  # counters and user signals (scoring) stay
            topics[topic_id]["usage"] = previous["usage"]

    # Indexed once, now, in conversation order (seed 004 §3): no later turn re-embeds them.
    destination = {m["id"]: topic_id for topic_id, ms in grouped.items() for m in ms}
    stores.message_index.add(candidates, [destination[m["id"]] for m in candidates])
    # A topic grown past its window's limit is divided now, before any window reads it (§4.5).
    events += divide_large_topics(services, stores, topics, touched=list(grouped), refused=refused)

    events.insert(
        0,
        {
            "kind": "split",
            "topic_ids": list(grouped),
            "detail": f"{len(candidates)} messages into {len(grouped)} topics ({len(created)} new)",
        },
    )
    if activated:
        events.append(
            {
                "kind": "activated",
                "topic_ids": activated,
                "reason": "split",
                "detail": "touched by the split",
            }
        )
    get_stream_writer()(
        {
            "event": "split",
            "messages": len(candidates),
            "topics": list(grouped),
            "created": list(created.values()),
        }
    )
    if state.get("turn_mode") == "import":  # an import turn ends here: no bookkeeping to log it
        log_turn(services, thread_id, state, topics, events)
    update: dict[str, Any] = {
        "messages": [RemoveMessage(id=m["id"]) for m in candidates],
        "topics": topics,
        "events": events,
        "last_split_id": candidates[-1]["id"],
        **_ranges_of(store),
    }
    if refused:
        update["oversized_topics"] = Overwrite({})
    return update


def _ranges_of(store: TopicStore) -> dict[str, Any]:
    """The branch's records after this split's writes, for the checkpoint (``store_ranges``)."""
    if isinstance(store, BranchedTopicStore):
        return {"store_ranges": as_state(store.visible_ranges())}
    return {}


def _mark_latest_unit(infos: list[TopicInfo], store: TopicStore, message_id: str | None) -> None:
    """Give the topic holding the newest split message that message's unit (``latest_unit``).

    A split only sees the messages it moves; without the unit before them, the first of them
    could not continue the subject the previous split ended on.
    """
    if not message_id:
        return
    holder = store.locate(message_id)
    for info in infos:
        if info["id"] == holder:
            unit = unit_in_store(store, message_id)
            if unit:
                info["latest_unit"] = unit
            return
