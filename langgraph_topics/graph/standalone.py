"""The topic graph keeps its own state between turns: it refuses to run as another graph's node.

Added to an application's graph as a node (``builder.add_node("memory", build_graph())``),
the graph would start every turn from the parent's messages alone: a subgraph's state lasts
one run of its parent, so the topic registry, the working set's counters and the last window
were gone each turn. It then took every message it had split for a crash's leftover, found
none of the topics it had made, and handed every message back to the parent, which kept them
all: nothing was remembered and the parent's messages grew without bound. So the first step
of a turn refuses, with one line naming the ways that work.

Nested means the run's checkpoint namespace holds a parent's (LangGraph joins the levels with
``|``); a graph with a checkpointer of its own (``TopicMemory.run_turn`` inside an agent's
node) runs at the top of its own thread and is never refused, nor is ``build_graph(
full_input=True)``, which the node helpers invoke with the whole state.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from langgraph_topics.errors import InputError
from langgraph_topics.graph.routed import Node
from langgraph_topics.services import TopicContext
from langgraph_topics.state.schema import TopicState

NAMESPACE_SEPARATOR = "|"
"""How LangGraph joins a subgraph's checkpoint namespace to its parent's."""


def standalone(node: Node) -> Node:
    """``node`` (the graph's first step), refusing to run inside another graph's run."""

    def step(state: TopicState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
        info = runtime.execution_info
        namespace = info.checkpoint_ns if info is not None else ""
        if NAMESPACE_SEPARATOR in namespace:
            parent = namespace.split(NAMESPACE_SEPARATOR, 1)[0].split(":", 1)[0]
            raise InputError(
                f"the topic-memory graph cannot be the node {parent!r} of another graph (its "
                "topics and working set would start empty every turn, and nothing would be "
                "remembered): add topic memory with topic_memory_nodes(builder, ...) from "
                "langgraph_topics.integrations, or TopicMemoryMiddleware with create_agent, or "
                "call TopicMemory.run_turn in your own node"
            )
        return node(state, runtime)

    step.__name__ = getattr(node, "__name__", step.__name__)
    step.__doc__ = node.__doc__
    return step
