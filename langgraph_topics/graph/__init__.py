"""Graph assembly and routing."""

from langgraph_topics.graph.builder import build_graph

__all__ = ["build_graph"]
