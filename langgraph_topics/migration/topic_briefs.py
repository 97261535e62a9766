"""Carry a thread's topic index (the briefs searched every turn) over to the target profile.

The source index is read, not the topic files: it says which topics are searchable and with
which status (``active``, ``dormant``…), and what text was embedded for each. The target's index
embeds that text again with the target's embedder.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from langgraph_topics.services import index_collection_name
from langgraph_topics.stores.data_layout import index_directory
from langgraph_topics.stores.protocols import TopicIndex, TopicStore


@dataclass(frozen=True)
class IndexedTopic:
    """One topic as the source index holds it."""

    name: str
    brief: str
    status: str


def read_source_index(data_dir: Path, thread_id: str) -> dict[str, tuple[str, str]]:
    """The raw entries of a thread's embedded topic index: topic id → (document, status).

    Opens the existing Chroma database of ``data_dir`` read-only in effect: nothing is created
    when the thread has no index (an empty mapping is returned).
    """
    import chromadb
    from chromadb.config import Settings
    from chromadb.errors import NotFoundError

    path = index_directory(data_dir)
    if not path.is_dir():
        return {}
    # The same settings as ChromaTopicIndex: Chroma allows one settings object per path.
    client = chromadb.PersistentClient(
        path=str(path), settings=Settings(anonymized_telemetry=False)
    )
    try:
        collection = client.get_collection(index_collection_name(thread_id))
    except (NotFoundError, ValueError):
        return {}
    found = collection.get(include=["documents", "metadatas"])
    documents = found["documents"] or []
    metadatas = found["metadatas"] or []
    entries: dict[str, tuple[str, str]] = {}
    for topic_id, document, metadata in zip(found["ids"], documents, metadatas, strict=True):
        status = (metadata or {}).get("status", "active")
        entries[topic_id] = (document or "", str(status))
    return entries


def indexed_topics(
    entries: Mapping[str, tuple[str, str]], store: TopicStore
) -> dict[str, IndexedTopic]:
    """The source index's topics with the name and brief it embedded.

    The index embeds the name, a line break and the brief; the name is the topic store's, and
    the brief is the rest of the document (the store's brief when the document does not start
    with the name).
    Topics the store does not hold are left out.
    """
    known = set(store.topic_ids())
    topics: dict[str, IndexedTopic] = {}
    for topic_id, entry in entries.items():
        if topic_id not in known:
            continue
        document, status = entry
        meta = store.meta(topic_id)
        name = meta["name"]
        prefix = f"{name}\n"
        brief = document[len(prefix) :] if document.startswith(prefix) else meta["brief"]
        topics[topic_id] = IndexedTopic(name=name, brief=brief, status=status)
    return topics


def upsert_topics(index: TopicIndex, topics: Mapping[str, IndexedTopic]) -> int:
    """Put every topic into ``index`` (an upsert: running it again changes nothing).

    Returns:
        How many topics were written.
    """
    for topic_id, topic in topics.items():
        index.upsert(topic_id, topic.name, topic.brief, status=topic.status)
    return len(topics)
