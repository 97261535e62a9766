"""Assemble the topic-memory graph (nothing is compiled at import time)."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from langgraph_topics.graph import routing
from langgraph_topics.graph.node_times import NodeWrapper
from langgraph_topics.graph.routed import routed, state_only
from langgraph_topics.graph.standalone import standalone
from langgraph_topics.graph.state_updates import guard_state_updates
from langgraph_topics.nodes.activate import activate
from langgraph_topics.nodes.assemble import assemble
from langgraph_topics.nodes.bookkeeping import bookkeeping
from langgraph_topics.nodes.end_context import end_context
from langgraph_topics.nodes.estimate import estimate
from langgraph_topics.nodes.inject_workflow import inject_workflow
from langgraph_topics.nodes.recall_cue import recall_cue
from langgraph_topics.nodes.respond import respond
from langgraph_topics.nodes.search_memory import search_memory
from langgraph_topics.nodes.split import split
from langgraph_topics.nodes.topic_window import topic_window
from langgraph_topics.services import TopicContext
from langgraph_topics.state.schema import InputState, TopicState, TopicWindowInput


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    *,
    full_input: bool = False,
    name: str = "topic_memory",
    wrap_nodes: NodeWrapper | None = None,
) -> CompiledStateGraph[TopicState, TopicContext, InputState, TopicState]:
    """Build and compile the topic-memory graph.

    Args:
        checkpointer: Persistence for the working set (e.g. ``open_sqlite_checkpointer``);
            leave ``None`` when a server brings its own (LangGraph Studio / Server).
        full_input: Accept the whole state as input (used to replay a state without
            persisting it, for context queries); the default input is ``messages`` and ``mode``.
        name: The graph's name, as Studio and parent graphs show it.
        wrap_nodes: Wraps every node (``bench overhead`` adds up their CPU time, records their
            outputs or plays them back); ``None`` runs the nodes as they are.

    Returns:
        The compiled graph. Pass ``context=TopicContext(services=...)`` when invoking to choose
        the stores and back ends; without it the process default (from the environment) serves.
    """

    def node(name: str, function: Any) -> Any:
        return function if wrap_nodes is None else wrap_nodes.wrap(name, function)

    builder = StateGraph(
        TopicState,
        context_schema=TopicContext,
        input_schema=TopicState if full_input else InputState,
        output_schema=TopicState,
    )
    # The routed nodes pick their successor themselves (graph/routed.py); ``destinations``
    # draws those edges for Studio.
    # The turn's workflow path first (seed 001 T4; nothing without one), a node Studio draws.
    # Run as another graph's node, the graph would lose its state every turn: it refuses.
    first = inject_workflow if full_input else standalone(inject_workflow)
    builder.add_node("inject_workflow", node("inject_workflow", first))
    # Over 70 % of the budget: split before the topic windows read anything, unless the memory
    # splits after the reply (TopicMemory: the user never waits for the splitter); a split run
    # (mode "split") writes the split prepared then.
    builder.add_node(
        "estimate",
        node("estimate", routed(estimate, routing.after_estimate)),
        destinations=("split", "recall_cue", END),
    )
    builder.add_node(
        "split",
        node("split", routed(split, state_only(routing.after_split))),
        destinations=("recall_cue", END),
    )
    # A recall cue searches the index first; otherwise every active topic is read in parallel.
    builder.add_node(
        "recall_cue",
        node("recall_cue", routed(recall_cue, routing.after_recall_cue)),
        destinations=("activate", "topic_window", "assemble"),
    )
    # After an activation only the newly activated topics are read.
    builder.add_node(
        "activate",
        node("activate", routed(activate, routing.fan_out)),
        destinations=("topic_window", "assemble"),
    )
    builder.add_node(
        "topic_window", node("topic_window", topic_window), input_schema=TopicWindowInput
    )
    # Weak results search the index once; a context query then puts the thread back as it was,
    # and an "assemble" turn (the application's model answers) ends with the window.
    builder.add_node(
        "assemble",
        node("assemble", routed(assemble, routing.after_assemble)),
        destinations=("activate", "respond", "end_context", END),
    )
    # The responder may ask for topics (activate_topic); its reply is then regenerated.
    # ... or to read a stored tool result (read_namespace): the window then shows it in full.
    # ... or to search the thread (search_memory): the next window gives the call its reply.
    builder.add_node(
        "respond",
        node("respond", routed(respond, state_only(routing.after_respond))),
        destinations=("activate", "search_memory", "assemble", "bookkeeping"),
    )
    builder.add_node("search_memory", node("search_memory", search_memory))
    builder.add_node("bookkeeping", node("bookkeeping", bookkeeping))
    builder.add_node("end_context", node("end_context", end_context))

    # Every turn reads the thread's workflow, then estimates the main window with its block.
    builder.add_edge(START, "inject_workflow")
    builder.add_edge("inject_workflow", "estimate")
    builder.add_edge("topic_window", "assemble")
    builder.add_edge("search_memory", "assemble")
    # A context query puts the thread back as it found it.
    builder.add_edge("end_context", END)
    builder.add_edge("bookkeeping", END)
    compiled = builder.compile(checkpointer=checkpointer, name=name)
    # update_state may add or edit messages, never remove one (it would be lost).
    guard_state_updates(compiled)
    return compiled
