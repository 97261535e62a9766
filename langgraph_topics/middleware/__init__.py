"""Topic memory for LangChain agents built with ``create_agent`` (see ``agent``)."""

from langgraph_topics.middleware.agent import (
    ACTIVATE_TOPIC,
    ModelCallWindow,
    TopicAgentState,
    TopicMemoryMiddleware,
    supports_tools,
)

__all__ = [
    "ACTIVATE_TOPIC",
    "ModelCallWindow",
    "TopicAgentState",
    "TopicMemoryMiddleware",
    "supports_tools",
]
