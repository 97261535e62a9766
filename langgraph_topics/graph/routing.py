"""Edge functions: where a turn goes after each node."""

from __future__ import annotations

from typing import Literal

from langgraph.runtime import Runtime
from langgraph.types import Send

from langgraph_topics.activation.fan_out_plan import govern, over_max_active, skipped_this_turn
from langgraph_topics.retrieval.turn_evidence import turn_evidence
from langgraph_topics.services import TopicContext, services_of, thread_id_of
from langgraph_topics.state.schema import TopicState, TopicWindowInput, TopicWindowTask
from langgraph_topics.state.turn_records import turn_records
from langgraph_topics.subtopics.families import prior_families


def after_estimate(
    state: TopicState, runtime: Runtime[TopicContext]
) -> Literal["split", "recall_cue", "__end__"]:
    """Split first when the estimate passed the trigger; an import without a split ends here.

    A chat turn of a memory that splits after the reply (``TopicContext.prepared_splits``)
    reads on instead: the user does not wait for the splitter. A split run goes straight to
    the split it was started for. A topic refused as too long by its window's provider also
    goes through the split, which divides it into subtopics.
    """
    mode = state.get("turn_mode")
    if mode == "split" or state.get("oversized_topics"):
        return "split"
    if state["estimate"]["split"]:
        later = getattr(runtime.context, "prepared_splits", None) is not None
        return "recall_cue" if later and mode in ("chat", "assemble") else "split"
    return "__end__" if mode == "import" else "recall_cue"


def after_split(state: TopicState) -> Literal["recall_cue", "__end__"]:
    """An import or a split run stops after splitting; a chat or context turn goes on."""
    return "__end__" if state.get("turn_mode") in ("import", "split") else "recall_cue"


def after_recall_cue(
    state: TopicState, runtime: Runtime[TopicContext]
) -> Literal["activate", "assemble"] | list[Send]:
    """A recall cue searches the index before the fan-out; otherwise fan out now."""
    if state.get("activation"):
        return "activate"
    return fan_out(state, runtime)


def fan_out(state: TopicState, runtime: Runtime[TopicContext]) -> Literal["assemble"] | list[Send]:
    """One topic-window task per active topic that has no result yet this turn.

    After an activation only the newly activated topics lack a result, so only they are read;
    the earlier results are reused. Each task carries the governor's decision
    (``activation/governor.py``): a skipped topic's task only records the skip and why, a
    reused one returns the topic's previous result without a model call.
    """
    done = state.get("topic_results") or {}
    skipped = skipped_this_turn(state)  # an earlier pass's skips stand for the turn
    pending = [
        topic_id
        for topic_id, record in (state.get("topics") or {}).items()
        if record["status"] == "active" and topic_id not in done and topic_id not in skipped
    ]
    if not pending:
        return "assemble"
    services = services_of(runtime)
    unsplit = turn_records(state["messages"])
    thread_id = thread_id_of(runtime)
    round_ = state.get("activation_rounds", 0)
    families = prior_families(state.get("topics") or {})
    # Seed 000 §4.7: never more than max_active read, whatever the registry holds; then the
    # governor decides the model calls (none for the native back end).
    # The question's evidence only when the cap is passed: the same memo the governor reads.
    decisions = over_max_active(
        state,
        services,
        lambda: turn_evidence(
            services, services.branch_stores(thread_id, state), unsplit, families
        ),
    )
    reading = [t for t in pending if t not in decisions]
    decisions |= govern(state, services, thread_id, reading, unsplit, families)
    tasks = [
        TopicWindowTask(
            thread_id=thread_id,
            topic_id=topic_id,
            round=round_,
            unsplit=unsplit,
            store_ranges=state.get("store_ranges"),
        )
        for topic_id in pending
    ]
    for task in tasks:
        if families:
            task["families"] = families
        decision = decisions.get(task["topic_id"])
        if decision is not None:
            task["governor"] = decision
    return [Send("topic_window", TopicWindowInput(window_task=task)) for task in tasks]


def after_assemble(
    state: TopicState, runtime: Runtime[TopicContext]
) -> Literal["activate", "respond", "end_context", "__end__"]:
    """Weak results → search the index once (seed: zero relevant topics → search more briefs).

    Then a context query restores the thread, an "assemble" turn ends, a chat turn answers;
    an import never gets here.
    """
    threshold = services_of(runtime).settings.reference_threshold
    topics = state.get("topics") or {}
    results = (state.get("topic_results") or {}).values()
    weak = not any(r["relevance_score"] >= threshold for r in results)
    has_dormant = any(t["status"] == "dormant" for t in topics.values())
    if weak and has_dormant and not state.get("searched"):
        return "activate"
    mode = state.get("turn_mode")
    if mode == "assemble":  # the application's own model answers (integrations.subgraph)
        return "__end__"
    return "end_context" if mode == "context" else "respond"


def after_respond(
    state: TopicState,
) -> Literal["activate", "search_memory", "assemble", "bookkeeping"]:
    """The responder asked for topics, a search or a stored tool result: fetch, answer again.

    Topics (``activate_topic``) are activated; a search (``search_memory``) runs over the
    thread and the window is assembled again with its reply; a read (``read_namespace``)
    assembles the window again with the full text.
    """
    if state.get("activation"):
        return "activate"
    if state.get("memory_search"):
        return "search_memory"
    return "assemble" if state.get("namespace_request") else "bookkeeping"
