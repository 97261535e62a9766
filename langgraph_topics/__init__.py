"""Topic-partitioned memory for LangChain and LangGraph chat applications."""

from langgraph_topics.graph.builder import build_graph
from langgraph_topics.graph.review import build_review_graph
from langgraph_topics.memory import ContextReport, TopicMemory, TopicSummary
from langgraph_topics.review.context import ReviewContext
from langgraph_topics.review.criteria import ArchiveGuard
from langgraph_topics.services import TopicContext, TopicServices
from langgraph_topics.settings import Settings

__all__ = [
    "ArchiveGuard",
    "ContextReport",
    "ReviewContext",
    "Settings",
    "TopicContext",
    "TopicMemory",
    "TopicServices",
    "TopicSummary",
    "build_graph",
    "build_review_graph",
]
