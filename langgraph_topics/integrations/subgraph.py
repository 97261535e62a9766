"""The topic-memory graph as nodes of an application's own LangGraph graph.

The application's state extends :class:`~langgraph_topics.state.schema.TopicState`, so it shares
``messages`` with topic memory and its checkpointer keeps the topic registry. A turn runs::

    START → topic_context → <your model node> → topic_bookkeeping → END

``topic_context`` runs the topic-memory graph up to the assembled window (``state["context"]``;
turn it into model input with :func:`~langgraph_topics.integrations.messages.context_messages`)
and removes the messages it split into topics from ``messages``, so the application's
checkpoint stays bounded too; ``topic_bookkeeping`` records this turn's scores, grey activation
and dormancy once the model has answered. In a ReAct loop route the tools back to
``topic_context``: a tool round (no new user message) records the tool exchange and assembles
the window again from the turn's topic results, without running the topic windows again. A
model node reading the window after the usual ``tools → model`` edge would read the window of
the call before, without the tool's result, and call the tool again until the recursion limit:
:func:`topic_memory_nodes` adds both nodes and wires the loop the right way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from langchain_core.messages import AnyMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import ExecutionInfo, Runtime
from langgraph.types import Overwrite

from langgraph_topics.graph.builder import build_graph
from langgraph_topics.integrations.tool_rounds import (
    continues_user_turn,
    stamped,
    tool_round_update,
)
from langgraph_topics.nodes.bookkeeping import bookkeeping
from langgraph_topics.roles.llm.deadline import settings_deadline
from langgraph_topics.services import TopicContext, TopicServices, services_of
from langgraph_topics.settings import Settings
from langgraph_topics.state.messages import TIMESTAMP_KEY
from langgraph_topics.state.schema import TopicState

TopicNode = Callable[[TopicState, RunnableConfig], dict[str, Any]]
"""A node function of the application's graph."""

CONTEXT_NODE = "topic_context"
BOOKKEEPING_NODE = "topic_bookkeeping"
"""The names :func:`topic_memory_nodes` gives the two memory nodes."""

_PER_TURN_KEYS = ("topic_results", "events")
"""Keys with accumulating reducers: the subgraph's final value replaces the parent's."""


def topic_context_node(services: TopicServices | None = None) -> TopicNode:
    """A node that assembles this turn's main window from topic memory.

    Args:
        services: Stores, settings and role back ends (``None``: the process default from the
            ``LANGGRAPH_TOPICS_*`` environment variables).

    Returns:
        The node function; its update writes ``messages`` (split messages removed, new ones
        time-stamped), the topic registry and ``context``.
    """
    graph = build_graph(full_input=True, name="topic_context")

    def topic_context(state: TopicState, config: RunnableConfig) -> dict[str, Any]:
        messages = state["messages"]
        last_seen = state.get("last_seen_id")
        ids = [m.id for m in messages]
        new = messages[ids.index(last_seen) + 1 :] if last_seen in ids else list(messages)
        if continues_user_turn(state, new, messages):
            return _tool_round(state, new, config, services)
        payload = {key: value for key, value in state.items() if key in TopicState.__annotations__}
        payload["mode"] = "assemble"
        settings = services.settings if services is not None else Settings()
        with settings_deadline(settings, "assemble"):
            result = cast(
                dict[str, Any],
                graph.invoke(cast(Any, payload), config, context=TopicContext(services=services)),
            )
        kept = {m.id for m in result["messages"]}
        # The subgraph returns its final working set; the parent's add_messages reducer would
        # keep what the split moved out, so the removals are spelled out.
        removals = [RemoveMessage(id=m.id) for m in state["messages"] if m.id and m.id not in kept]
        update: dict[str, Any] = {
            key: value
            for key, value in result.items()
            if key in TopicState.__annotations__ and key not in ("messages", "mode")
        }
        for key in _PER_TURN_KEYS:
            if key in update:
                update[key] = Overwrite(update[key])
        update["messages"] = [*removals, *result["messages"]]
        return update

    return topic_context


def topic_bookkeeping_node(services: TopicServices | None = None) -> TopicNode:
    """A node that closes the turn after the application's model answered.

    It counts the model's reply as a message of the thread (so the invariant checks hold between
    turns) and records scores, grey activation and dormancy like the graph's own bookkeeping.

    Args:
        services: The same services as the ``topic_context`` node's.
    """

    def topic_bookkeeping(state: TopicState, config: RunnableConfig) -> dict[str, Any]:
        runtime = Runtime(context=TopicContext(services=services))
        messages = state["messages"]
        last_seen = state.get("last_seen_id")
        ids = [m.id for m in messages]
        new = messages[ids.index(last_seen) + 1 :] if last_seen in ids else []
        now = services_of(runtime).clock().isoformat()
        stamped = [
            m.model_copy(update={"additional_kwargs": {**m.additional_kwargs, TIMESTAMP_KEY: now}})
            for m in new
            if TIMESTAMP_KEY not in m.additional_kwargs
        ]
        update = bookkeeping(state, runtime)
        update["messages"] = stamped
        update["total_messages"] = state.get("total_messages", 0) + len(new)
        update["last_seen_id"] = messages[-1].id if messages else last_seen
        return update

    return topic_bookkeeping


def topic_memory_nodes(
    builder: StateGraph[Any, Any, Any, Any],
    model: str,
    tools: str | None = None,
    *,
    services: TopicServices | None = None,
) -> None:
    """Add topic memory around a model node (and its tools node) of ``builder``.

    Wired so that every model call reads the window of the round it answers::

        START → topic_context → model ─(tool calls)→ tools → topic_context (the window again)
                                      └─(an answer)→ topic_bookkeeping → END

    The state must extend :class:`~langgraph_topics.state.schema.TopicState`; add ``model``
    (it reads ``context_messages(state["context"], ...)``) and ``tools`` (e.g. LangGraph's
    ``ToolNode``) as nodes yourself, before or after this call, and no other edges from START,
    out of them or into END.

    Args:
        builder: The application's graph, not compiled yet.
        model: The node calling the model; after it, a reply with tool calls goes to ``tools``.
        tools: The node running the tools (None: the model calls none).
        services: Stores, settings and role back ends of both memory nodes (``None``: the
            process default).
    """
    # TopicNode is a plain callable: LangGraph's overloads know nodes by their parameter names.
    builder.add_node(CONTEXT_NODE, cast(Any, topic_context_node(services)))
    builder.add_node(BOOKKEEPING_NODE, cast(Any, topic_bookkeeping_node(services)))
    builder.add_edge(START, CONTEXT_NODE)
    builder.add_edge(CONTEXT_NODE, model)
    builder.add_edge(BOOKKEEPING_NODE, END)
    if tools is None:
        builder.add_edge(model, BOOKKEEPING_NODE)
        return

    def after_model(state: TopicState) -> str:
        """Tools for a reply that calls them; the turn's bookkeeping for an answer."""
        last = state["messages"][-1] if state["messages"] else None
        calls = getattr(last, "tool_calls", None)
        return tools if calls else BOOKKEEPING_NODE

    builder.add_conditional_edges(model, after_model, [tools, BOOKKEEPING_NODE])
    # The round's results are recorded and the window assembled again before the model reads.
    builder.add_edge(tools, CONTEXT_NODE)


def _tool_round(
    state: TopicState,
    new: list[AnyMessage],
    config: RunnableConfig,
    services: TopicServices | None,
) -> dict[str, Any]:
    """The context of a tool round (``tools → topic_context``) of the user turn under way.

    One memory turn per user turn: the tool exchange is recorded and the window assembled
    again from the turn's topic results, with no estimate, split or topic windows.
    """
    configurable = config.get("configurable") or {}
    thread_id = configurable.get("thread_id")
    info = ExecutionInfo(
        checkpoint_id="",
        checkpoint_ns="",
        task_id="",
        thread_id=None if thread_id is None else str(thread_id),
    )
    runtime = Runtime(context=TopicContext(services=services), execution_info=info)
    recorded = stamped(new, services_of(runtime).clock().isoformat())
    before = {**state, "messages": state["messages"][: len(state["messages"]) - len(new)]}
    # The stamped copies keep their ids: the parent's add_messages replaces the originals.
    return tool_round_update(before, recorded, runtime)
