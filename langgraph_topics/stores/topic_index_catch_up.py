"""Bring a thread's topic index level with its topic store when the stores are opened.

A topic the index lacks can never be found by an index search (a dormant topic's activation,
a recall cue), although its messages are kept. That happens when an index write failed after
the store's (a division's follow-up writes, a brief the index did not get before a crash), and,
with topics in a shared ``BaseStore`` (the ``postgres`` profile, a platform store) and the topic
index in a local Chroma directory, for every topic another worker split or re-briefed. Opening a
thread's stores therefore indexes what the store holds and the index lacks, or holds with
another brief.
"""

from __future__ import annotations

import logging

from langgraph_topics.errors import first_line
from langgraph_topics.stores.protocols import ReviewableTopicStore, TopicStore
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
    # A rebuilt index (a damaged one set aside) must not make archived topics searchable.
    archived = (
        {entry["topic_id"] for entry in store.archive_entries()}
        if isinstance(store, ReviewableTopicStore)
        else set()
    )
    written = 0
    for topic_id in store.topic_ids():
        meta = store.meta(topic_id)
        entry = held.get(topic_id)
        if entry is not None and entry[0] == topic_document(meta["name"], meta["brief"]):
            continue
        status = entry[1] if entry is not None else "archived" if topic_id in archived else "active"
        index.upsert(topic_id, meta["name"], meta["brief"], status=status)
        written += 1
    if written:
        log.info("topic index: %d topics indexed from the topic store", written)
    return written


def mend_topic_index(index: ChromaTopicIndex, store: TopicStore, thread_id: str) -> None:
    """:func:`catch_up_topic_index` on opening a thread's own stores, which it must not fail.

    The stores open for reads too (a context query, ``check``, a read-only copy): an index
    that cannot be written now is left as it is, with one warning line, and mended on a
    later open.
    """
    try:
        catch_up_topic_index(index, store)
    except Exception as error:
        log.warning("thread %s: topic index not mended: %s", thread_id, first_line(error))
