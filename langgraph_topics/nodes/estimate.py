"""Step 0 of a turn: count the new messages, reconcile after a crash, estimate the window."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from langchain_core.messages import AnyMessage, RemoveMessage
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from langgraph_topics.namespace.policy import NamespacePolicy
from langgraph_topics.namespace.window import windowed_messages
from langgraph_topics.prompts.language import detect_language
from langgraph_topics.prompts.main_window import render_system_prompt
from langgraph_topics.services import TopicContext, TopicServices, services_of, thread_id_of
from langgraph_topics.settings import Settings
from langgraph_topics.state.messages import TIMESTAMP_KEY, text_of
from langgraph_topics.state.records import EstimateRecord, ThreadBefore, TopicRecord, TurnEvent
from langgraph_topics.state.schema import TopicState
from langgraph_topics.state.turn_records import new_turn, turn_records
from langgraph_topics.stores.protocols import SplittableTopicStore
from langgraph_topics.tokens import message_tokens
from langgraph_topics.workflow.render import render_workflow_block

log = logging.getLogger(__name__)


def _new_messages(messages: list[AnyMessage], last_seen_id: str | None) -> list[AnyMessage]:
    """Messages after the last one already counted (all of them on the first turn)."""
    if last_seen_id is None:
        return list(messages)
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].id == last_seen_id:
            return list(messages[index + 1 :])
    return list(messages)


def _keep_edits_of_split_messages(
    new: list[AnyMessage], services: TopicServices, thread_id: str, state: TopicState
) -> tuple[list[AnyMessage], list[AnyMessage | RemoveMessage], list[TurnEvent]]:
    """New messages under the id of a message a topic already holds, kept under new ids.

    ``update_state`` (Studio's editor) that edits a message already split into a topic adds
    it to the working set again: counted twice and split into a second copy of one id
    (invariant 1). Topic files are append-only, so the stored message stays as it was and the
    edit is kept as a message of its own (nothing is lost). Returns the new messages as they
    stay, the removals and renamed copies to apply, and the events saying so.
    """
    if not new:
        return new, [], []
    store = services.branch_stores(thread_id, state).topic_store
    kept: list[AnyMessage] = []
    changes: list[AnyMessage | RemoveMessage] = []
    events: list[TurnEvent] = []
    for message in new:
        topic_id = store.locate(message.id) if message.id else None
        if topic_id is None:
            kept.append(message)
            continue
        renamed = message.model_copy(update={"id": f"{message.id}~{uuid.uuid4().hex[:8]}"})
        changes += [RemoveMessage(id=str(message.id)), renamed]
        kept.append(renamed)
        detail = (
            f"message {message.id} is already held by topic {topic_id} (stored messages are "
            f"not replaced): the new text is kept as message {renamed.id}"
        )
        log.warning("%s", detail)
        events.append({"kind": "reconciled", "detail": detail, "topic_ids": [topic_id]})
    return kept, changes, events


def _reconcile(
    state: TopicState, services: TopicServices, thread_id: str
) -> tuple[list[RemoveMessage], dict[str, TopicRecord], list[TurnEvent]]:
    """Repair what a crash between a store write and its checkpoint left behind (old threads).

    A thread whose checkpoints record their topic-store ranges never needs it: records no
    checkpoint recorded stay unseen and the messages are split again. A thread from before the
    ranges reads every record, so a split the crash cut short shows its ids in both places;
    the store is the durable side, so the working-set copies go, and topics created but never
    registered are registered.
    """
    store = services.branch_stores(thread_id, state).topic_store
    keep_recent = services.settings.keep_recent
    messages = state["messages"]
    older = messages[:-keep_recent] if keep_recent else messages
    removals = [RemoveMessage(id=m.id) for m in older if m.id and store.locate(m.id) is not None]
    topics = dict(state.get("topics") or {})
    events: list[TurnEvent] = []
    registered: list[str] = []
    for topic_id in store.topic_ids():
        if topic_id in topics:
            continue
        registered.append(topic_id)
        meta = store.meta(topic_id)
        topics[topic_id] = {
            "id": topic_id,
            "name": meta["name"],
            "status": "active",
            "parent_id": meta["parent_id"],
            "scores": [],
            "created_at": meta["created_at"],
            "last_active_at": meta["updated_at"],
            "message_count": meta["message_count"],
        }
        events.append(
            {
                "kind": "reconciled",
                "detail": f"registered stored topic {topic_id}",
                "topic_ids": [topic_id],
            }
        )
    # A division the registry missed shows as children registered just now: their parents
    # follow the store (looked at only then, not every turn).
    parents = {topics[t]["parent_id"] for t in registered} - {None}
    if parents and isinstance(store, SplittableTopicStore):
        for parent_id in parents:
            record = topics.get(parent_id) if parent_id is not None else None
            if record is None or record["status"] == "split":
                continue
            children = store.children(record["id"])
            if children:
                topics[record["id"]] = {**record, "status": "split", "children": children}
                events.append(
                    {
                        "kind": "reconciled",
                        "detail": f"{record['id']} was divided into subtopics: registry follows",
                        "topic_ids": [record["id"], *children],
                    }
                )
    if removals:
        events.append(
            {
                "kind": "reconciled",
                "detail": f"dropped {len(removals)} working-set copies already in topics",
            }
        )
        log.warning("reconciled %d messages already split before a crash", len(removals))
    return removals, topics, events


def over_threshold(settings: Settings, system_tokens: int, total: int) -> bool:
    """Whether an estimated window of ``total`` tokens triggers a split.

    ``budget70`` (seed 000 §4.1): ``total`` over ``split_trigger`` (70 %) of the budget.
    ``dynamic`` (seed 001 T1): ``available = budget - system tokens``; the rest of the window
    (topic results and messages) over ``dynamic_trigger`` (60 %) of ``available``.
    """
    budget = settings.budget_tokens
    if settings.split_threshold == "dynamic":
        available = max(0, budget - system_tokens)
        return total - system_tokens > settings.dynamic_trigger * available
    return total / budget > settings.split_trigger


def expected_topic_tokens(last_turn: int, settings: Settings) -> int:
    """What the topic results are expected to take of the next window (seed 000 §4.1).

    They fill whatever room the messages leave (the assembler selects by value), so they are
    expected to need what they took last turn, at most the share the trigger keeps free for
    them: counted whole, a full window would make every turn split.
    """
    return min(last_turn, round((1 - settings.split_trigger) * settings.budget_tokens))


def split_batch(settings: Settings, recent_over: bool) -> int:
    """How many messages older than the last ``keep_recent`` a split waits for.

    ``min_split_messages``; and when the last ``keep_recent`` messages alone pass the trigger
    (``recent_over``: a small budget, or an agent whose own prompt and tools leave the memory
    little of it), at least half of ``keep_recent``. No split can bring such a window under the
    trigger: it only keeps the working set bounded (here within 1.5 times ``keep_recent``),
    and each one rewrites a brief and re-indexes it, so it waits for runs of exchanges instead
    of splitting every other turn. The waiting messages stay in the working set, scored as
    evidence and chosen by value like any other (nothing a split would put in the window is
    kept out of it).
    """
    if not recent_over:
        return settings.min_split_messages
    return max(settings.min_split_messages, settings.keep_recent // 2)


def estimate(state: TopicState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Count this turn's new messages and estimate the main window (seed 000 §4.1 step 0).

    The workflow path ``inject_workflow`` wrote just before (seed 001 T4) is rendered as the
    assembler will show it: the block on top of the system prompt counts in the estimate.
    Over ``split_trigger`` (70 %) of the budget (or, with ``split_threshold="dynamic"``, over
    60 % of the budget left by the system prompt), the graph splits before anything else, once
    enough messages are older than the last ``keep_recent`` (:func:`split_batch`); a chat
    turn whose memory plans splits after the reply (``TopicContext.prepared_splits``) reads on
    and leaves it to them (the 30 % above the trigger is the room the next turn has).
    """
    services = services_of(runtime)
    settings = services.settings
    thread_id = thread_id_of(runtime)
    new_turn()
    if state.get("mode") == "split":
        # A split run writes what was prepared after the last reply: no message is new, and
        # the last turn's window, results, counters and events stay as that turn left them
        # (the split's events follow the turn's: the split is that turn's aftermath).
        return {"mode": None, "turn_mode": "split"}
    messages = state["messages"]
    new = _new_messages(messages, state.get("last_seen_id"))
    new, edits, edit_events = _keep_edits_of_split_messages(new, services, thread_id, state)
    now = services.clock().isoformat()

    def stamp(message: AnyMessage) -> AnyMessage:
        if TIMESTAMP_KEY in message.additional_kwargs:
            return message
        kwargs = {**message.additional_kwargs, TIMESTAMP_KEY: now}
        return message.model_copy(update={"additional_kwargs": kwargs})

    # Stamped in place (same id); renamed edits are removed under their old id and added anew.
    edited = {m.id for m in edits if isinstance(m, RemoveMessage)}
    renamed = [m for m in edits if not isinstance(m, RemoveMessage)]
    renamed_ids = {m.id for m in renamed}
    stamped = [
        stamp(m)
        for m in new
        if TIMESTAMP_KEY not in m.additional_kwargs and m.id not in renamed_ids
    ]
    edit_updates = [m if isinstance(m, RemoveMessage) else stamp(m) for m in edits]
    removals, topics, events = _reconcile(state, services, thread_id)
    events = [*edit_events, *events]
    # Older working-set copies of split messages go (a crash); this turn's edits of split
    # messages were renamed above and stay.
    removals = [r for r in removals if r.id not in edited]
    removed = {r.id for r in removals} | edited

    counter = services.token_counter
    kept = [m for m in messages if m.id not in removed] + renamed  # as the reducer leaves it
    language = detect_language((text_of(m) for m in kept[-10:]), settings.language)
    system_tokens = counter(render_system_prompt([], language, settings.prompt_dir))
    workflow = state.get("workflow")
    if workflow is not None:  # the block on top of the system prompt (seed 001 T4)
        system_tokens += counter(render_workflow_block(workflow, language, settings.prompt_dir))
    previous = state.get("context")
    any_active = any(t["status"] == "active" for t in topics.values())
    topic_tokens = expected_topic_tokens(
        previous["sections"]["topics"] if previous and any_active else 0, settings
    )
    # Large tool results count as the window shows them: their reference and preview.
    shown = windowed_messages(
        turn_records(kept),
        NamespacePolicy.of(settings),
        language,
        settings.prompt_dir,
        preview_chars=settings.namespace_preview_chars,
    )
    counts = [message_tokens(m, counter) for m in shown]
    message_total = sum(counts)
    total = system_tokens + topic_tokens + message_total
    # Older than the last keep_recent and not yet split (reconciliation removed split ones).
    waiting = max(0, len(kept) - settings.keep_recent)
    share = total / settings.budget_tokens
    recent_total = system_tokens + sum(
        counts[-settings.keep_recent :] if settings.keep_recent else []
    )
    record: EstimateRecord = {
        "system": system_tokens,
        "topics": topic_tokens,
        "messages": message_total,
        "total": total,
        "budget": settings.budget_tokens,
        "share": round(share, 4),
        "split": over_threshold(settings, system_tokens, total)
        and waiting >= split_batch(settings, over_threshold(settings, system_tokens, recent_total)),
    }
    if settings.split_threshold == "dynamic":
        record["available"] = settings.budget_tokens - system_tokens
    mode = state.get("mode") or "chat"
    if mode == "context" and not services.writes_in_memory:
        # A context query on a checkpointed thread must leave it as it was: no split writes
        # to the stores (the assembler keeps the window in budget), and the end puts back
        # the working set, the registry and the counters (``end_context``).
        record["split"] = False
    update: dict[str, Any] = {}
    if topics != state.get("topics"):
        update["topics"] = topics
    before: ThreadBefore | None = None
    if mode == "context":
        before = {
            "message_ids": [m.id for m in new if m.id],
            "topics": dict(state.get("topics") or {}),
            "total_messages": state.get("total_messages", 0),
            "last_seen_id": state.get("last_seen_id"),
            "turn": state.get("turn", 0),
        }
    if any(state.get(k) for k in ("read_namespace", "namespace_reads", "namespace_request")):
        # The references to show in full are this turn's only (seed 001 T2: one round).
        update["namespace_reads"] = list(state.get("read_namespace") or [])
        update["read_namespace"] = None
        update["namespace_request"] = None
    if state.get("memory_search") or state.get("memory_searches"):
        # The responder's searches answer the turn that made them only.
        update["memory_search"] = None
        update["memory_searches"] = []
    if state.get("store_ranges") is None and not state.get("topics"):
        # A new thread owns no topic records yet; every split adds its own. (A thread whose
        # checkpoints predate the ranges, or whose topics were seeded without them, keeps
        # reading every record until its next split.)
        update["store_ranges"] = []
    return update | {
        "messages": [*stamped, *edit_updates, *removals],
        "total_messages": state.get("total_messages", 0) + len(new),
        "last_seen_id": kept[-1].id if kept else state.get("last_seen_id"),
        "turn": state.get("turn", 0) + 1,
        "mode": None,
        "turn_mode": mode,
        "estimate": record,
        "topic_results": Overwrite({}),
        "events": Overwrite(events),
        "activation": None,
        "activation_rounds": 0,
        "searched": False,
        "clarify_topics": [],
        "thread_before": before,
    }
