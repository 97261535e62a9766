"""Nodes that name their own successor: the node's update and its route in one ``Command``.

The graph's routes (``graph/routing.py``) stay plain functions of the state. Run as
conditional edges, each made LangGraph copy every channel of the state to show it the node's
writes; here the route reads the state with the update applied (``state/after_update.py``),
the same values, and the node returns ``Command(update=..., goto=route)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast

from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from langgraph_topics.services import TopicContext
from langgraph_topics.state.after_update import StateAfter
from langgraph_topics.state.schema import TopicState

Route = Callable[[TopicState, Runtime[TopicContext]], str | Sequence[Send]]


class Node(Protocol):
    """A node of the topic graph: the state and the runtime in, a partial update out."""

    def __call__(self, state: TopicState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
        """The node's update of the state."""
        ...


class RoutedNode(Protocol):
    """A node as LangGraph calls it (the runtime by keyword), returning its next step too."""

    def __call__(self, state: TopicState, *, runtime: Runtime[TopicContext]) -> Command[Any]:
        """The node's update and the next step (a node name, ``__end__`` or ``Send`` tasks)."""
        ...


def routed(node: Node, route: Route) -> RoutedNode:
    """``node`` returning its update with where ``route`` sends the turn next."""

    def step(state: TopicState, *, runtime: Runtime[TopicContext]) -> Command[Any]:
        update = node(state, runtime)
        after = cast(TopicState, StateAfter(state, update))
        return Command(update=update, goto=route(after, runtime))

    # What traces and Studio show of the node: its own name and docstring.
    step.__name__ = getattr(node, "__name__", step.__name__)
    step.__doc__ = node.__doc__
    return step


def state_only(route: Callable[[TopicState], str]) -> Route:
    """A route that reads the state only, in the shape :func:`routed` calls."""
    return lambda state, runtime: route(state)
