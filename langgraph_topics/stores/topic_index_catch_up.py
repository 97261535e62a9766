"""Bring a worker's topic index level with topics that other workers wrote to a shared store.

With topics in a shared ``BaseStore`` (the ``postgres`` profile, a platform store) and the topic
index in a local Chroma directory, each worker holds its own index: a topic another worker split
or re-briefed would never be found by this one's searches. Opening a thread's stores therefore
indexes what the shared topics hold and the index lacks, or holds with another brief.
"""

from __future__ import annotations

import logging

from langgraph_topics.stores.protocols import TopicStore
from langgraph_topics.stores.topic_index import ChromaTopicIndex, topic_document

log = logging.getLogger(__name__)


def catch_up_topic_index(index: ChromaTopicIndex, store: TopicStore) -> int:
    """Index every topic of ``store`` the index lacks or holds with another name or brief.

    A topic keeps the status the index gave it; one the index never held comes in ``active``,
    as a split indexes it. Topics only the index holds are left alone (another branch's).

    Returns:
        How many topics were (re-)indexed.
    """
    held = index.entries()
    written = 0
    for topic_id in store.topic_ids():
        meta = store.meta(topic_id)
        entry = held.get(topic_id)
        if entry is not None and entry[0] == topic_document(meta["name"], meta["brief"]):
            continue
        status = entry[1] if entry is not None else "active"
        index.upsert(topic_id, meta["name"], meta["brief"], status=status)
        written += 1
    if written:
        log.info("topic index: %d topics indexed from the shared store", written)
    return written
