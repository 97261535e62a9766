"""Notice when the user thinks the assistant forgot (seed 000 §4.7 path 3)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.config import get_stream_writer

from langgraph_topics.activation.recall_cues import find_recall_cue
from langgraph_topics.state.messages import text_of
from langgraph_topics.state.records import ActivationRequest, TurnEvent
from langgraph_topics.state.schema import TopicState


def latest_user_text(state: TopicState) -> str:
    """Text of the newest user message of the working set ('' when there is none)."""
    for message in reversed(state["messages"]):
        if isinstance(message, HumanMessage):
            return text_of(message)
    return ""


def recall_cue(state: TopicState) -> dict[str, Any]:
    """Request a deep index search, without asking the user, when a recall cue appears."""
    text = latest_user_text(state)
    cue = find_recall_cue(text) if state.get("topics") else None
    if cue is None:
        return {}
    request: ActivationRequest = {"query": text, "reason": "recall_cue", "deep": True}
    event: TurnEvent = {"kind": "recall_cue", "detail": f"cue {cue!r}: deep index search"}
    get_stream_writer()({"event": "recall_cue", "cue": cue})
    return {"activation": request, "events": [event]}
