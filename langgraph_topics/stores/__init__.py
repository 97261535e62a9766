"""Stores: topic files, the topic-brief index, embeddings and the checkpointer."""

from langgraph_topics.stores.checkpointer import open_sqlite_checkpointer
from langgraph_topics.stores.embeddings import LangChainEmbedder, UseEmbedder
from langgraph_topics.stores.protocols import Embedder, TopicIndex, TopicStore
from langgraph_topics.stores.topic_index import ChromaTopicIndex, InMemoryTopicIndex
from langgraph_topics.stores.topic_store import JsonlTopicStore

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
