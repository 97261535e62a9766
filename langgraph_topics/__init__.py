"""Topic-partitioned memory for LangChain and LangGraph chat applications."""

from langgraph_topics.graph.builder import build_graph
from langgraph_topics.memory import ContextReport, TopicMemory, TopicSummary
from langgraph_topics.services import TopicContext, TopicServices
from langgraph_topics.settings import Settings

__all__ = [
    "ContextReport",
    "Settings",
    "TopicContext",
    "TopicMemory",
    "TopicServices",
    "TopicSummary",
    "build_graph",
]
