"""Graph assembly and routing."""

from langgraph_topics.graph.builder import build_graph
from langgraph_topics.graph.review import build_review_graph

__all__ = ["build_graph", "build_review_graph"]
