"""The graph that ``langgraph.json`` exports to LangGraph Studio and the LangGraph Server.

It is compiled without a checkpointer because the server brings its own persistence. The
services (settings, stores, role back ends) come from the environment on first use: the data
directory from ``LANGGRAPH_TOPICS_DATA_DIR`` and the budget from ``LANGGRAPH_TOPICS_BUDGET``;
the role back ends are the offline native ones, so ``langgraph dev`` needs no model provider.
"""

from __future__ import annotations

from langgraph_topics.graph.builder import build_graph

graph = build_graph(name="topic_memory")
"""The compiled topic-memory graph (input: chat ``messages`` and an optional ``mode``)."""

__all__ = ["graph"]
