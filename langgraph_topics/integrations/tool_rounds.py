"""One memory turn per user turn: tool rounds reuse the turn's topic results.

An agent calls its model once per user message and then once more after every round of tool
calls. Only the user message asks a new question: the topic windows' verdicts (the fan-out,
the costly part of a memory turn: one cheap-model call per active topic with models) answer
it for every call of that turn. A tool round therefore records the new tool exchange and
assembles the window again from the turn's topic results (the evidence, the budgeted
selection, the recent messages with the exchange in them, whole: invariant 8), without an
estimate, a split, a fan-out or a bookkeeping; the next user message runs a whole turn again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.runtime import Runtime

from langgraph_topics.nodes.assemble import assemble
from langgraph_topics.services import TopicContext
from langgraph_topics.state.messages import TIMESTAMP_KEY
from langgraph_topics.state.schema import TopicState


def continues_user_turn(
    values: Mapping[str, Any], fresh: Sequence[BaseMessage], messages: Sequence[BaseMessage]
) -> bool:
    """Whether ``fresh`` continues the user turn the thread's last window was assembled for.

    Args:
        values: The memory's state (its ``context`` is the last assembled window).
        fresh: The messages the memory does not hold yet (tool results, a reply).
        messages: The conversation as the caller has it, ``fresh`` included.

    Returns:
        True when nothing in ``fresh`` is a user message and the newest user message is among
        the recent messages of the last window: a tool round or a retry of that turn.
    """
    context = values.get("context")
    if not context or any(isinstance(m, HumanMessage) for m in fresh):
        return False
    last_user = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
    return last_user is not None and last_user.id in (context.get("recent_ids") or [])


def stamped(messages: Sequence[BaseMessage], now: str) -> list[BaseMessage]:
    """``messages`` with the time they were recorded (a message that has one keeps it)."""
    return [
        m
        if TIMESTAMP_KEY in m.additional_kwargs
        else m.model_copy(update={"additional_kwargs": {**m.additional_kwargs, TIMESTAMP_KEY: now}})
        for m in messages
    ]


def tool_round_update(
    values: Mapping[str, Any],
    new: Sequence[BaseMessage],
    runtime: Runtime[TopicContext],
    *,
    reads: Sequence[str] = (),
) -> dict[str, Any]:
    """The state update of a tool round: ``new`` recorded, the window assembled again.

    Args:
        values: The memory's state before the round (its topic results are reused).
        new: The round's messages, time-stamped (see :func:`stamped`).
        runtime: The memory's runtime for the thread (its services set the budget).
        reads: ``namespace://`` references to show in full in this window (seed 001 T2).

    Returns:
        ``context`` (the new window), ``namespace_reads`` and, when ``new`` holds messages,
        ``messages`` (to append), ``total_messages`` and ``last_seen_id``.
    """
    working = [*(values.get("messages") or []), *new]
    state = {**values, "messages": working, "namespace_reads": list(reads)}
    state["namespace_request"] = None
    update: dict[str, Any] = {
        "context": assemble(cast(TopicState, state), runtime)["context"],
        "namespace_reads": list(reads),
    }
    if new:
        update["messages"] = list(new)
        update["total_messages"] = values.get("total_messages", 0) + len(new)
        update["last_seen_id"] = new[-1].id
    return update
