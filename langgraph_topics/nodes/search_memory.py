"""Run the responder's ``search_memory`` call over the whole thread (issue 38 item 5).

"When did we decide…" wants dated original messages wherever they are, split into a topic or
not: :func:`~langgraph_topics.retrieval.history_search.search_history` answers it from the
thread's index, as ``TopicMemory.search`` does (no model call, nothing written). Only the
hits' ids are recorded; the next assembly quotes their messages as the call's reply, within
the budget and never twice (``retrieval/search_window.py``), and the responder answers again.
"""

from __future__ import annotations

import logging
from typing import Any

from langgraph.runtime import Runtime

from langgraph_topics.errors import log_degraded
from langgraph_topics.retrieval.history_search import search_history
from langgraph_topics.retrieval.search_request import RefusedSearch, checked_search
from langgraph_topics.scope.run_scope import scope_quotes_of
from langgraph_topics.services import TopicContext, services_of, thread_id_of
from langgraph_topics.state.records import MemorySearchHit, MemorySearchRecord, TurnEvent
from langgraph_topics.state.schema import TopicState
from langgraph_topics.state.turn_records import turn_records

log = logging.getLogger(__name__)

CANDIDATES = 16
"""Hits read per search: the window shows at most ``search_window.HITS`` of them, and the
best may already be in it (they are not quoted twice)."""


def search_memory(state: TopicState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Search the thread for the pending request; record the hits for the next window."""
    request = state.get("memory_search") or {"query": ""}
    searches = list(state.get("memory_searches") or [])
    record: MemorySearchRecord = {
        "call_id": f"search_memory-{state.get('turn', 0)}-{len(searches) + 1}",
        "request": request,
        "hits": [],
    }
    checked = checked_search(request)
    if isinstance(checked, RefusedSearch):
        record["problem"] = checked.problem
        record["problem_detail"] = checked.detail
        detail = f"search_memory refused ({checked.problem})"
    else:
        services = services_of(runtime)
        thread_id = thread_id_of(runtime)
        topics = state.get("topics") or {}
        try:
            found = search_history(
                services,
                services.branch_stores(thread_id, state),
                turn_records(state["messages"]),
                topics,
                checked.query,
                limit=CANDIDATES,
                since=checked.since,
                until=checked.until,
            )
        except Exception as error:  # invariant 4: the search degrades, the turn answers
            log_degraded(log, "search_memory failed", error)
            record["problem"] = "failed"
            record["problem_detail"] = str(error).split("\n", 1)[0][:200]
            found = []
        # A bare tool call has no text to quote: it is found through its results.
        hits: list[MemorySearchHit] = [
            {
                "message_id": hit["message_id"],
                "topic_name": hit["topic_name"] if hit["topic_id"] is not None else "",
            }
            for hit in found
            if hit["snippet"].strip()
        ]
        record["hits"] = hits
        detail = f"search_memory {checked.query[:80]!r}: {len(hits)} messages found"
        # User scope: the user's other threads too; what they hold joins the turn's quotes of
        # them, which the next window shows after its instructions (``scope/window.py``).
        elsewhere, _ = scope_quotes_of(runtime).search(checked.query, checked.since, checked.until)
        if elsewhere:
            detail += f", {elsewhere} more in the user's other threads"
    event: TurnEvent = {"kind": "memory_search", "detail": detail}
    return {"memory_search": None, "memory_searches": [*searches, record], "events": [event]}
