"""Assemble the review graph (seed 000 §4.8): a second entry on the same thread's state.

It runs over the topic graph's own state schema, on the same thread and checkpointer: it
reads the checkpoint a turn left, changes the registry (statuses, merges), the review record
and ``store_ranges``, and writes the next checkpoint of the same thread. So the next turn,
Studio (the thread's history shows the review as a step) and ``check`` all see what it did,
with no second copy of the registry to keep in step, and a fork before a review still sees
the topics as they were. Every other key of the turn passes through untouched.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from langgraph_topics.nodes.review_archive import review_archive
from langgraph_topics.nodes.review_briefs import review_briefs
from langgraph_topics.nodes.review_finish import review_finish
from langgraph_topics.nodes.review_merge import review_merge
from langgraph_topics.nodes.review_request import review_request
from langgraph_topics.services import TopicContext
from langgraph_topics.state.review import ReviewInput, ReviewState


def route_review(state: ReviewState) -> Literal["review_briefs", "review_request"]:
    """A request for one topic goes to its own step; anything else is a review."""
    return "review_request" if state.get("review_request") else "review_briefs"


def build_review_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None, *, name: str = "topic_review"
) -> CompiledStateGraph[ReviewState, TopicContext, ReviewInput, ReviewState]:
    """Build and compile the review graph.

    Args:
        checkpointer: The topic graph's checkpointer (the review runs on its threads); leave
            ``None`` when a server brings its own.
        name: The graph's name, as Studio shows it.

    Returns:
        The compiled graph. Invoke it on a thread with ``{"review_now": "2030-01-01"}`` (or
        ``{}``) and ``context=ReviewContext(services=...)``, holding the thread's writer lock
        (``TopicMemory.review`` does all of that).
    """
    builder = StateGraph(
        ReviewState,
        # The topic graph's context: a ReviewContext (its subclass) adds the archive guard.
        context_schema=TopicContext,
        input_schema=ReviewInput,
        output_schema=ReviewState,
    )
    builder.add_node("review_briefs", review_briefs)
    builder.add_node("review_merge", review_merge)
    builder.add_node("review_archive", review_archive)
    builder.add_node("review_finish", review_finish)
    builder.add_node("review_request", review_request)

    # Archive or restore one topic by request, or review the whole thread.
    builder.add_conditional_edges(START, route_review, ["review_briefs", "review_request"])
    # Briefs first, so that merging compares up-to-date fingerprints ...
    builder.add_edge("review_briefs", "review_merge")
    # ... merges before archiving, so that a merged topic is judged as a whole ...
    builder.add_edge("review_merge", "review_archive")
    # ... and the record of the review last, with every write's store ranges.
    builder.add_edge("review_archive", "review_finish")
    builder.add_edge("review_finish", END)
    builder.add_edge("review_request", END)
    return builder.compile(checkpointer=checkpointer, name=name)
