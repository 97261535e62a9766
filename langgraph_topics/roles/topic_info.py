"""Build what a role is told about a topic from the registry and the topic store."""

from __future__ import annotations

from langgraph_topics.roles.protocols import TopicInfo
from langgraph_topics.state.records import TopicRecord, TopicStatus
from langgraph_topics.stores.protocols import TopicStore


def topic_info(store: TopicStore, topic_id: str, status: TopicStatus) -> TopicInfo:
    """A topic's name, brief and file as the store has them now."""
    meta = store.meta(topic_id)
    return {
        "id": topic_id,
        "name": meta["name"],
        "brief": meta["brief"],
        "status": status,
        "file": meta["file"],
    }


def topic_infos(topics: dict[str, TopicRecord], store: TopicStore) -> list[TopicInfo]:
    """Every registered topic that is not archived, nor divided into subtopics.

    A divided topic's messages are its children's: new messages go to one of them.
    """
    return [
        topic_info(store, t["id"], t["status"])
        for t in topics.values()
        if t["status"] not in ("archived", "split")
    ]
