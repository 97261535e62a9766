"""Search a thread's whole history: "where did we talk about X?" (seed 004 §3, issue 38).

The question users ask a memory most after "do you remember X". It is answered from the work a
turn already does, once per question: the thread-wide evidence scores of every message, split
or not (``retrieval/evidence.py``: BM25 and cosine, fused with the neighbouring turn and the
topic's prior), so no model is called and nothing is written. Each hit is an original message
with its date and its topic, best first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TypedDict

from langgraph_topics.retrieval.evidence import Evidence
from langgraph_topics.retrieval.related_terms import query_expansion
from langgraph_topics.services import ThreadStores, TopicServices
from langgraph_topics.state.records import StoredMessage, TopicRecord
from langgraph_topics.state.working_set import unsplit_messages
from langgraph_topics.stores.protocols import TopicStore
from langgraph_topics.stores.topic_records import parse_time
from langgraph_topics.subtopics.families import prior_families

SNIPPET_CHARS = 200
"""A hit's text is shown up to this many characters (``TopicMemory.expand`` gives it whole)."""
FIRST_READ = 50
"""Best messages read first; a date filter that leaves fewer than asked reads four times more."""


class SearchHit(TypedDict):
    """One message found by :func:`search_history`."""

    message_id: str
    topic_id: str | None
    """The topic holding it (None: not split into a topic yet)."""
    topic_name: str
    role: str
    timestamp: str | None
    relevance: float
    """The message's relevance to the query in [0, 1]."""
    snippet: str


def search_history(
    services: TopicServices,
    stores: ThreadStores,
    working: Sequence[StoredMessage],
    topics: Mapping[str, TopicRecord],
    query: str,
    *,
    limit: int = 10,
    since: datetime | None = None,
    until: datetime | None = None,
    expand: bool = True,
) -> list[SearchHit]:
    """The ``limit`` messages of the thread that best answer ``query``, best first.

    Args:
        services: The memory's services (its scorer).
        stores: The thread's stores (of the branch being read).
        working: The thread's working set (its unsplit messages are searched too).
        topics: The topic registry (names, and the subtopic families of the topic prior).
        query: Free text, any language the embedder handles.
        limit: At most this many hits.
        since: Only messages sent at or after this time (messages without a date left out).
        until: Only messages sent at or before this time (likewise).
        expand: Also look for the terms this thread relates to the query's ("auth" → login,
            jwt, token when it uses them together; ``retrieval/related_terms.py``), weighing
            less than the query's own.
    """
    if limit <= 0 or not query.strip():
        return []
    store = stores.topic_store
    unsplit = unsplit_messages(working, store)
    index = stores.message_index
    expansion = query_expansion(index, query) if expand else None
    evidence = services.scorer.score(
        index, query, unsplit, prior_families(topics), expansion=expansion
    )
    ids = _ids_by_position(evidence, stores, unsplit)
    dated = since is not None or until is not None
    read = FIRST_READ
    while True:
        best = [ids[p] for p in evidence.top(max(read, limit)) if p < len(ids)]
        found = _messages(store, unsplit, best)
        kept = [i for i in best if i in found and _within(found[i], since, until)]
        if len(kept) >= limit or not dated or read >= len(ids):
            break
        read *= 4
    located = store.locate_many(kept[:limit])
    return [_hit(found[i], located.get(i), topics, evidence.relevance_of(i)) for i in kept[:limit]]


def _ids_by_position(
    evidence: Evidence, stores: ThreadStores, unsplit: Sequence[StoredMessage]
) -> list[str]:
    """Each scored position's message id: the index's rows, then the unsplit messages."""
    indexed = len(evidence.base_codes)
    return [*stores.message_index.ids[:indexed], *(m["id"] for m in unsplit)]


def _messages(
    store: TopicStore, unsplit: Sequence[StoredMessage], ids: Sequence[str]
) -> dict[str, StoredMessage]:
    held = {m["id"]: m for m in unsplit}
    return {**store.get_messages([i for i in ids if i not in held]), **held}


def _within(message: StoredMessage, since: datetime | None, until: datetime | None) -> bool:
    if since is None and until is None:
        return True
    sent = parse_time(message.get("timestamp"))
    if sent is None:
        return False
    return (since is None or sent >= since) and (until is None or sent <= until)


def _hit(
    message: StoredMessage,
    topic_id: str | None,
    topics: Mapping[str, TopicRecord],
    relevance: float,
) -> SearchHit:
    record = topics.get(topic_id) if topic_id is not None else None
    name = record["name"] if record is not None else ""
    text = " ".join(message["content"].split())
    return {
        "message_id": message["id"],
        "topic_id": topic_id,
        "topic_name": name or (topic_id or ""),
        "role": message["role"],
        "timestamp": message.get("timestamp"),
        "relevance": round(relevance, 4),
        "snippet": text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…",
    }
