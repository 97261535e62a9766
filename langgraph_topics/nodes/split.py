"""Split the older unsplit messages into topics (seed 000 §4.4, §6.4)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import RemoveMessage
from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from langgraph_topics.activation.active_cap import sleep_over_cap
from langgraph_topics.roles.native.topic_names import thread_name
from langgraph_topics.roles.topic_info import topic_info
from langgraph_topics.scoring.usage import with_counts
from langgraph_topics.services import TopicContext, services_of, thread_id_of
from langgraph_topics.splitting.prepared import PreparedSplit, prepare_split, still_valid
from langgraph_topics.state.records import StoredMessage, TopicRecord, TurnEvent
from langgraph_topics.state.schema import TopicState
from langgraph_topics.state.units import split_point
from langgraph_topics.state.working_set import stored_view, unsplit_messages
from langgraph_topics.stores.protocols import BranchedTopicStore, TopicStore
from langgraph_topics.stores.seq_ranges import as_state
from langgraph_topics.subtopics.triggers import divide_large_topics
from langgraph_topics.tuning.turn import log_turn

log = logging.getLogger(__name__)


def split(state: TopicState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Move the unsplit messages older than the last ``keep_recent`` into topics.

    Messages are appended to the topic store first and leave the working set only afterwards,
    in the same checkpoint that records the new records as this branch's (``store_ranges``).
    A crash in between leaves records no checkpoint owns: unseen, while the messages are still
    in the working set, to be split again. Nothing is lost, nothing is seen twice.

    The splitter's plan and the new briefs (``splitting.prepared``) are asked for here, or,
    in a split run, were asked for after the last reply (``splitting.background``): then only
    the writes happen here, once the plan is checked to still fit the thread.
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

    topics = dict(state.get("topics") or {})
    prepared, stale = _prepared_for(state, runtime, store, unsplit[:cut], topics)
    if prepared is None:
        if stale is not None:  # a split run finds nothing it may write: nothing changes
            return {"events": [{"kind": "split", "detail": f"prepared split dropped: {stale}"}]}
        prepared = prepare_split(
            services,
            stores,
            topics,
            candidates,
            state.get("last_split_id"),
            new_topic_starts=state.get("new_topic_hints") or (),
        )
    candidates = prepared.candidates
    events: list[TurnEvent] = list(prepared.events)

    created: dict[str, str] = {}
    created_names: list[str] = []
    grouped: dict[str, list[StoredMessage]] = {}
    for (kind, key), messages in prepared.grouped().items():
        if kind == "new":
            spec = prepared.new_topics.get(key, {"key": key, "name": "", "brief": ""})
            first = messages[0].get("timestamp")
            written = prepared.briefs.get((kind, key))
            # Two topics of one name leave the user to open both: a repeated name is replaced
            # by what tells this topic apart (issue 36 item 3).
            name = thread_name(
                (written[0] if written else "") or spec["name"] or "Unsorted",
                messages,
                topics,
                lambda topic_id: store.meta(topic_id)["brief"],
                created_names,
            )
            if written is not None:
                prepared.briefs[(kind, key)] = (name, written[1], written[2])
            meta = store.create_topic(name, spec["brief"], created_at=first)
            created[key] = meta["id"]
            created_names.append(name)
            events.append(
                {"kind": "topic_created", "detail": meta["name"], "topic_ids": [meta["id"]]}
            )
        grouped[created[key] if kind == "new" else key] = messages
    briefs = {
        (created[key] if kind == "new" else key): brief
        for (kind, key), brief in prepared.briefs.items()
    }

    turn_time = candidates[-1].get("timestamp") or services.clock().isoformat()
    activated: list[str] = []
    for topic_id, messages in grouped.items():
        store.append(topic_id, messages)
        written = briefs.get(topic_id)
        if written is None:  # the writer failed: the previous brief (and card) stay
            info = topic_info(store, topic_id, "active")
            name, brief, card = info["name"], info["brief"], store.meta(topic_id).get("brief_card")
        else:
            name, brief, card = written
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
    if state.get("turn_mode") == "split":
        # No bookkeeping follows a split run: what it would do for a split is done here (the
        # topics the split added to count it, the active set back within max_active).
        for topic_id in grouped:
            topics[topic_id] = with_counts(topics[topic_id], {"updated": 1})
        events += sleep_over_cap(topics, services.settings, stores.topic_index, "after a split")
    if state.get("turn_mode") == "import":  # an import turn ends here: no bookkeeping to log it
        log_turn(services, thread_id, state, topics, events)
    elif state.get("turn_mode") == "split":  # its own line: the turn's events are logged already
        log_turn(services, thread_id, {**state, "events": []}, topics, events)
    update: dict[str, Any] = {
        "messages": [RemoveMessage(id=m["id"]) for m in candidates],
        "topics": topics,
        "events": events,
        "last_split_id": candidates[-1]["id"],
        **_ranges_of(store),
    }
    if refused:
        update["oversized_topics"] = Overwrite({})
    hints = state.get("new_topic_hints") or []
    if hints:
        # A verdict is used once, by the split that moves its message; one whose message is
        # gone (a context query's question) is dropped with it.
        left = {m["id"] for m in unsplit} - {m["id"] for m in candidates}
        update["new_topic_hints"] = [h for h in hints if h in left]
    return update


def _ranges_of(store: TopicStore) -> dict[str, Any]:
    """The branch's records after this split's writes, for the checkpoint (``store_ranges``)."""
    if isinstance(store, BranchedTopicStore):
        return {"store_ranges": as_state(store.visible_ranges())}
    return {}


def _prepared_for(
    state: TopicState,
    runtime: Runtime[TopicContext],
    store: TopicStore,
    candidates: Sequence[StoredMessage],
    topics: dict[str, TopicRecord],
) -> tuple[PreparedSplit | None, str | None]:
    """The split prepared for this split run, and why there is none that may be written.

    ``(None, None)`` outside a split run: the split is prepared here and now.
    """
    if state.get("turn_mode") != "split":
        return None, None
    splits = getattr(runtime.context, "prepared_splits", None)
    prepared = splits.take(thread_id_of(runtime)) if splits is not None else None
    if prepared is None:
        return None, "nothing was prepared for this thread"
    stale = still_valid(prepared, candidates, topics, store, state.get("last_split_id"))
    return (None, stale) if stale else (prepared, None)
