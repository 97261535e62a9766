"""Build what a role is told about a topic from the registry and the topic store."""

from __future__ import annotations

import logging

from langgraph_topics.roles.protocols import TopicInfo
from langgraph_topics.state.records import TopicRecord, TopicStatus
from langgraph_topics.stores.protocols import TopicStore

log = logging.getLogger(__name__)


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
    infos: list[TopicInfo] = []
    for topic in topics.values():
        if topic["status"] in ("archived", "split"):
            continue
        try:
            infos.append(topic_info(store, topic["id"], topic["status"]))
        except KeyError:
            # Its file was deleted or emptied by hand: new messages go to other topics
            # rather than failing every split; what it held is for ``repair`` to restore.
            log.warning(
                "topic %s is registered but not in the topic store (its file removed?); no "
                "message is split into it: `langgraph-topics repair` restores what the "
                "checkpoints still hold of it",
                topic["id"],
            )
    return infos
