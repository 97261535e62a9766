"""Topic memory for LangChain agents built with ``create_agent`` (see ``agent``)."""

from langgraph_topics.integrations.search_tool import SEARCH_MEMORY
from langgraph_topics.middleware.agent import (
    ACTIVATE_TOPIC,
    ModelCallWindow,
    TopicAgentState,
    TopicMemoryMiddleware,
    supports_tools,
)

__all__ = [
    "ACTIVATE_TOPIC",
    "SEARCH_MEMORY",
    "ModelCallWindow",
    "TopicAgentState",
    "TopicMemoryMiddleware",
    "supports_tools",
]
