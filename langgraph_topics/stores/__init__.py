"""Stores: topic files, the topic-brief index, embeddings and the checkpointer.

The names below are loaded on first use (``lazy_exports``): a small store module
(``stores.durable``, ``stores.file_lock``) imports without Chroma, LangGraph or numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langgraph_topics.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from langgraph_topics.stores.checkpointer import open_sqlite_checkpointer
    from langgraph_topics.stores.embeddings import LangChainEmbedder, UseEmbedder
    from langgraph_topics.stores.protocols import Embedder, TopicIndex, TopicStore
    from langgraph_topics.stores.topic_index import ChromaTopicIndex, InMemoryTopicIndex
    from langgraph_topics.stores.topic_store import JsonlTopicStore

_EXPORTS = {
    "ChromaTopicIndex": "langgraph_topics.stores.topic_index",
    "Embedder": "langgraph_topics.stores.protocols",
    "InMemoryTopicIndex": "langgraph_topics.stores.topic_index",
    "JsonlTopicStore": "langgraph_topics.stores.topic_store",
    "LangChainEmbedder": "langgraph_topics.stores.embeddings",
    "TopicIndex": "langgraph_topics.stores.protocols",
    "TopicStore": "langgraph_topics.stores.protocols",
    "UseEmbedder": "langgraph_topics.stores.embeddings",
    "open_sqlite_checkpointer": "langgraph_topics.stores.checkpointer",
}

__all__ = [
    "ChromaTopicIndex",
    "Embedder",
    "InMemoryTopicIndex",
    "JsonlTopicStore",
    "LangChainEmbedder",
    "TopicIndex",
    "TopicStore",
    "UseEmbedder",
    "open_sqlite_checkpointer",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
