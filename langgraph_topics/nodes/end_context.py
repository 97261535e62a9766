"""End of a context query: the thread is left as the query found it."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import RemoveMessage

from langgraph_topics.state.schema import TopicState


def end_context(state: TopicState) -> dict[str, Any]:
    """Take the query's messages out of the working set and put back registry and counters.

    The assembled window, the topic results and the events stay: they are the query's answer.
    """
    before = state.get("thread_before")
    if not before:
        return {}
    return {
        "messages": [RemoveMessage(id=i) for i in before["message_ids"]],
        "topics": before["topics"],
        "total_messages": before["total_messages"],
        "last_seen_id": before["last_seen_id"],
        "turn": before["turn"],
        "thread_before": None,
    }
