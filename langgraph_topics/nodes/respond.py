"""Answer from the assembled main window, or ask for topics first (seed 000 §4.1 step 5)."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from langgraph_topics.errors import log_degraded
from langgraph_topics.prompts.language import detect_language
from langgraph_topics.roles.protocols import ResponderReply
from langgraph_topics.runtime_protocols import takes_vectors
from langgraph_topics.scope.run_scope import scope_quotes_of
from langgraph_topics.services import TopicContext, services_of, thread_id_of
from langgraph_topics.state.messages import TIMESTAMP_KEY
from langgraph_topics.state.records import ActivationRequest, TurnEvent
from langgraph_topics.state.schema import TopicState

log = logging.getLogger(__name__)

_CLARIFY = {
    "zh": "你是指我们之前讨论的「{names}」吗？",
    "en": "Do you mean our earlier discussion about {names}?",
}
_FAILED = {
    "zh": "抱歉，我现在无法生成回答，请稍后再试。",
    "en": "Sorry, I could not produce an answer just now; please try again.",
}


def respond(state: TopicState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Run the responder; a request for activation, a stored tool result or a search loops back.

    Any request (``activate_topic``, ``read_namespace``, ``search_memory``) discards the reply.
    """
    services = services_of(runtime)
    settings = services.settings
    context = state["context"]
    language = detect_language((m["content"] for m in context["messages"][-10:]), settings.language)
    topics = state.get("topics") or {}
    # In user scope the user's other threads can be searched too, dormant topics here or not.
    can_activate = state.get("activation_rounds", 0) < settings.max_activation_rounds and (
        any(t["status"] == "dormant" for t in topics.values()) or scope_quotes_of(runtime).searches
    )
    events: list[TurnEvent] = []
    clarify = state.get("clarify_topics") or []
    relevant = any(
        r["relevance_score"] >= settings.reference_threshold
        for r in (state.get("topic_results") or {}).values()
    )
    if clarify and not relevant:
        reply: ResponderReply = {
            "text": _CLARIFY[language].format(
                names="」「".join(clarify) if language == "zh" else " or ".join(clarify)
            ),
            "activate_query": None,
        }
    else:
        try:
            reply = _respond(state, runtime, can_activate=can_activate)
        except Exception as error:
            log_degraded(log, "responder failed", error)
            events.append({"kind": "degraded", "detail": f"responder failed: {error}"})
            reply = {"text": _FAILED[language], "activate_query": None}
    reference = reply.get("read_namespace")
    if reference and context.get("namespace_refs"):
        # Shown in full in the next window of this turn only (seed 001 T2); an unknown
        # reference is answered there, in the window, and the model answers from the preview.
        return {"namespace_request": reference.strip(), "events": events}
    search = reply.get("search_memory")
    if search is not None and context.get("can_search"):
        # Searched by the next node; the window then gives the call its reply (issue 38).
        return {"memory_search": search, "events": events}
    if reply["activate_query"] and can_activate:
        request: ActivationRequest = {
            "query": reply["activate_query"],
            "reason": "tool_call",
            "deep": False,
        }
        return {"activation": request, "events": events}
    message = AIMessage(
        content=reply["text"],
        id=reply.get("message_id") or f"msg-{uuid.uuid4().hex[:12]}",
        tool_calls=reply.get("tool_calls") or [],
        additional_kwargs={TIMESTAMP_KEY: services.clock().isoformat()},
    )
    update: dict[str, Any] = {
        "messages": [message],
        "total_messages": state.get("total_messages", 0) + 1,
        "last_seen_id": message.id,
    }
    if events:
        update["events"] = events
    return update


def _respond(
    state: TopicState, runtime: Runtime[TopicContext], *, can_activate: bool
) -> ResponderReply:
    """The responder's reply; one comparing by meaning gets the quotes' indexed vectors."""
    services = services_of(runtime)
    responder = services.roles.responder
    context = state["context"]
    if not takes_vectors(responder) or responder.embedder is None:
        return responder.respond(context, can_activate=can_activate)
    stores = services.branch_stores(thread_id_of(runtime), state)
    if responder.embedder is not stores.message_index.embedder:  # vectors of another model
        return responder.respond(context, can_activate=can_activate)
    quoted = (m["id"] for m in context.get("referenced_messages", []))
    vectors = stores.message_index.stored_vectors(quoted)
    return responder.respond_with_vectors(context, can_activate=can_activate, vectors=vectors)
