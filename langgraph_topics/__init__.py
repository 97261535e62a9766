"""Topic-partitioned memory for LangChain and LangGraph chat applications.

The public names are loaded on first use (``lazy_exports``): ``import langgraph_topics`` alone
imports neither LangGraph nor Chroma nor numpy, so the command line answers ``--help`` at once
and the package imports where a POSIX-only module is missing (Windows).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langgraph_topics.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from langgraph_topics.graph.builder import build_graph
    from langgraph_topics.graph.review import build_review_graph
    from langgraph_topics.memory import ContextReport, TopicMemory, TopicSummary
    from langgraph_topics.review.context import ReviewContext
    from langgraph_topics.review.criteria import ArchiveGuard
    from langgraph_topics.services import TopicContext, TopicServices
    from langgraph_topics.settings import Settings

_EXPORTS = {
    "ArchiveGuard": "langgraph_topics.review.criteria",
    "ContextReport": "langgraph_topics.memory",
    "ReviewContext": "langgraph_topics.review.context",
    "Settings": "langgraph_topics.settings",
    "TopicContext": "langgraph_topics.services",
    "TopicMemory": "langgraph_topics.memory",
    "TopicServices": "langgraph_topics.services",
    "TopicSummary": "langgraph_topics.memory",
    "build_graph": "langgraph_topics.graph.builder",
    "build_review_graph": "langgraph_topics.graph.review",
}

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

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
