"""What each pending topic window of a fan-out does: the active cap, then the governor."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial

from langgraph_topics.activation.evidence_wake import holding_best
from langgraph_topics.activation.governor import (
    PROMPT_TOKENS,
    TopicCandidate,
    fingerprint,
    governs,
    memo_of,
    native_window,
    plan_windows,
    reach,
    reads_this_turn,
    spent_this_turn,
    topic_evidence,
)
from langgraph_topics.activation.grey import rank_active
from langgraph_topics.retrieval.evidence import Evidence
from langgraph_topics.retrieval.turn_evidence import turn_evidence
from langgraph_topics.roles.topic_info import topic_info
from langgraph_topics.runtime_protocols import has_views
from langgraph_topics.services import TopicServices
from langgraph_topics.state.records import StoredMessage, WindowDecision
from langgraph_topics.state.schema import TopicState
from langgraph_topics.state.working_set import newest_within
from langgraph_topics.summaries.topic_tokens import topic_tokens


def woken_this_turn(state: TopicState) -> set[str]:
    """Topics activated this turn (the split, a recall cue, the index, ``activate_topic``)."""
    return {
        t
        for e in state.get("events") or []
        if e["kind"] == "activated"
        for t in e.get("topic_ids", [])
    }


def skipped_this_turn(state: TopicState) -> set[str]:
    """Topics an earlier pass of this turn skipped (not planned again in a later pass)."""
    return {
        t
        for e in state.get("events") or []
        if e["kind"] == "skipped"
        for t in e.get("topic_ids", [])
    }


def over_max_active(
    state: TopicState, services: TopicServices, evidence: Callable[[], Evidence] | None = None
) -> dict[str, WindowDecision]:
    """Active topics past ``max_active`` by rank: never read, whatever the back end.

    Seed 000 §4.7's 3–20 holds at every moment: a registry that holds more (a checkpoint
    written before the cap, a split that touched many topics) reads its best ``max_active``
    only, and the turn's bookkeeping puts the rest to sleep. A topic woken this turn ranks
    first, and so does one holding the question's best messages (``evidence``, asked only when
    the cap is passed): the sleeping topic that holds them wakes for that (``evidence_wake``),
    and an active one must not be left unread for ranking last on its past scores.
    """
    settings = services.settings
    active = [t for t in (state.get("topics") or {}).values() if t["status"] == "active"]
    if len(active) <= settings.max_active:
        return {}
    protected = woken_this_turn(state)
    if evidence is not None:
        protected |= set(holding_best(evidence()))
    ranked = rank_active(active, settings, protected=protected)
    return {
        t["id"]: {
            "decision": "skip",
            "reason": "max_active",
            "detail": f"rank {rank + 1} past the maximum of {settings.max_active} active topics",
        }
        for rank, t in enumerate(ranked)
        if rank >= settings.max_active
    }


def govern(
    state: TopicState,
    services: TopicServices,
    thread_id: str,
    pending: Sequence[str],
    unsplit: list[StoredMessage],
    families: Mapping[str, str],
) -> dict[str, WindowDecision]:
    """The governor's decision for each pending topic (empty: not governed, read them all).

    ``unsplit`` must be the very list handed to the windows: the turn's evidence is worked
    out here once and the windows and the assembler find it.
    """
    settings = services.settings
    window = services.roles.topic_window
    if not pending or not governs(window, settings):
        return {}
    stores = services.branch_stores(thread_id, state)
    store = stores.topic_store
    evidence = turn_evidence(services, stores, unsplit, families)
    counter = services.token_counter
    # What a model window reads of the conversation (``LlmTopicWindow``), for its estimate.
    read = unsplit
    if settings.topic_window_context_tokens is not None:
        read = newest_within(unsplit, settings.topic_window_context_tokens, counter)
    working_tokens = sum(counter(m["content"]) for m in read)
    memo = memo_of(window)
    native = native_window(window)
    scope = (str(settings.data_dir), thread_id)
    candidates: list[TopicCandidate] = []
    unknown: list[str] = []
    for topic_id in pending:
        try:
            info = topic_info(store, topic_id, "active")
            messages: Sequence[StoredMessage] = (
                store.messages_view(topic_id) if has_views(store) else store.messages(topic_id)
            )
        except KeyError:
            unknown.append(topic_id)  # the window says so itself (a degraded event)
            continue
        native_score = (
            None
            if native is None
            else partial(native.score_with_evidence, info, evidence=evidence, with_brief=False)
        )
        found = topic_evidence(evidence, [m["id"] for m in messages], native_score)
        candidates.append(
            TopicCandidate(
                topic_id=topic_id,
                fingerprint=fingerprint(topic_id, messages, info["name"], info["brief"], found),
                evidence=found,
                input_tokens=PROMPT_TOKENS
                + topic_tokens(store, topic_id, messages, counter)
                + working_tokens,
            )
        )
    decisions = plan_windows(
        candidates,
        settings=settings,
        reach_rank=reach(settings, unsplit, state.get("estimate"), counter),
        requested=state.get("activation_rounds", 0) > 0,
        reusable=lambda c: memo.reusable(scope, c.topic_id, c.fingerprint),
        spent=spent_this_turn(state.get("topic_results") or {}),
        reads=reads_this_turn(state.get("topic_results") or {}),
    )
    for topic_id in unknown:
        decisions[topic_id] = {"decision": "read"}
    return decisions
