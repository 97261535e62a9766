"""Recall cues (seed 000 §4.7 path 3) and date queries (§4.8): explicit requests to remember.

A recall cue ("you forgot?", "我之前说过") and a date query ("what did we talk about in
March?") both start a deep index search before the topic windows run.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from langgraph_topics.activation.date_query import find_date_query
from langgraph_topics.activation.dated_topics import asked_periods
from langgraph_topics.activation.recall_cues import find_recall_cue
from langgraph_topics.services import TopicContext, services_of
from langgraph_topics.state.messages import TIMESTAMP_KEY, text_of
from langgraph_topics.state.records import ActivationRequest, TurnEvent
from langgraph_topics.state.schema import TopicState


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
        return {}
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
        request["periods"] = asked_periods(query.periods)
        events.append(
            {
                "kind": "date_query",
                "detail": f"{query.asks!r} about {query.describe()}: topics of the period",
            }
        )
        writer({"event": "date_query", "periods": request["periods"]})
    return {"activation": request, "events": events}
