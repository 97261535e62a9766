"""Embedding topic memory in existing LangChain and LangGraph applications."""

from langgraph_topics.integrations.chat_model import (
    TopicMemoryRunnable,
    new_user_message,
    with_topic_memory,
)
from langgraph_topics.integrations.history import import_chat_history
from langgraph_topics.integrations.messages import context_messages
from langgraph_topics.integrations.search_tool import SEARCH_MEMORY, search_memory_tool
from langgraph_topics.integrations.subgraph import (
    topic_bookkeeping_node,
    topic_context_node,
    topic_memory_nodes,
)

__all__ = [
    "SEARCH_MEMORY",
    "TopicMemoryRunnable",
    "context_messages",
    "import_chat_history",
    "new_user_message",
    "search_memory_tool",
    "topic_bookkeeping_node",
    "topic_context_node",
    "topic_memory_nodes",
    "with_topic_memory",
]
