"""The floor of a turn: the topic graph's shape with every node doing nothing.

``bench overhead`` divides the topic graph's per-turn cost by this graph's, built and run in
the same process: the same steps (estimate → recall cue → one ``Send`` per active topic →
assemble → respond → bookkeeping), the same fan-out, the same SQLite checkpointer, durability
and ``max_concurrency``, a 30-message working set and a registry of as many topics. What is
left over is the product's own work; what the floor costs is LangGraph and SQLite.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict, cast

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, Overwrite, Send

from langgraph_topics.memory import DURABILITY
from langgraph_topics.settings import Settings
from langgraph_topics.state.schema import InputState, TopicState, TopicWindowInput
from langgraph_topics.stores.checkpointer import open_sqlite_checkpointer

WORKING_SET = 30


def _working_set(left: list[AnyMessage], right: list[AnyMessage]) -> list[AnyMessage]:
    """``add_messages`` keeping the newest 30, as the topic graph's split keeps it bounded."""
    merged = cast(list[AnyMessage], add_messages(cast(Any, left), cast(Any, right)))
    return merged[-WORKING_SET:]


class FloorState(TypedDict, total=False):
    """What the topic graph's state carries, in kind and size, without its meaning."""

    messages: Annotated[list[AnyMessage], _working_set]
    topics: dict[str, dict[str, Any]]
    topic_results: Annotated[dict[str, dict[str, Any]], operator.or_]
    context: dict[str, Any]
    turn: int


class FloorTask(TypedDict):
    """One topic window's payload."""

    topic_id: str
    unsplit: list[AnyMessage]


def _nothing(state: FloorState | TopicState) -> dict[str, Any]:
    return {}


def _fan_out(state: FloorState) -> list[Send]:
    unsplit = state["messages"]
    return [
        Send("topic_window", {"topic_id": topic_id, "unsplit": unsplit})
        for topic_id, topic in state["topics"].items()
        if topic["status"] == "active"
    ]


def _topic_window(state: FloorTask) -> dict[str, Any]:
    return {"topic_results": {state["topic_id"]: {"relevance_score": 0.6, "ids": []}}}


def _assemble(state: FloorState | TopicState) -> dict[str, Any]:
    return {"context": {"messages": len(state["messages"])}}


def _respond(state: FloorState | TopicState) -> dict[str, Any]:
    return {"messages": [AIMessage("Noted.")]}


def _bookkeeping(state: FloorState | TopicState) -> dict[str, Any]:
    return {"turn": state.get("turn", 0) + 1}


def build_floor_graph(path: Path) -> Any:
    """The no-work graph on a SQLite checkpoint database at ``path``."""
    builder = StateGraph(FloorState)
    builder.add_node("estimate", _nothing)
    builder.add_node("recall_cue", _nothing)
    builder.add_node("topic_window", _topic_window, input_schema=FloorTask)
    builder.add_node("assemble", _assemble)
    builder.add_node("respond", _respond)
    builder.add_node("bookkeeping", _bookkeeping)
    builder.add_edge(START, "estimate")
    builder.add_edge("estimate", "recall_cue")
    builder.add_conditional_edges("recall_cue", _fan_out, ["topic_window"])
    builder.add_edge("topic_window", "assemble")
    builder.add_edge("assemble", "respond")
    builder.add_edge("respond", "bookkeeping")
    builder.add_edge("bookkeeping", END)
    return builder.compile(checkpointer=open_sqlite_checkpointer(path))


def _shaped_estimate(state: TopicState) -> Command[Any]:
    return Command(
        update={"topic_results": Overwrite({}), "events": Overwrite([])}, goto="recall_cue"
    )


def _shaped_recall_cue(state: TopicState) -> Command[Any]:
    tasks = [
        Send(
            "topic_window",
            TopicWindowInput(
                window_task={
                    "thread_id": "t",
                    "topic_id": topic_id,
                    "round": 0,
                    "unsplit": [],
                    "store_ranges": state.get("store_ranges"),
                }
            ),
        )
        for topic_id, topic in (state.get("topics") or {}).items()
        if topic["status"] == "active"
    ]
    return Command(goto=tasks)


def _shaped_topic_window(state: TopicWindowInput) -> dict[str, Any]:
    result = {"relevance_score": 0.6, "referenced_message_ids": []}
    return {"topic_results": {state["window_task"]["topic_id"]: result}}


def _shaped_assemble(state: TopicState) -> Command[Any]:
    return Command(update=_assemble(state), goto="respond")


def _shaped_respond(state: TopicState) -> Command[Any]:
    return Command(update=_respond(state), goto="bookkeeping")


def build_state_shaped_floor_graph(path: Path) -> Any:
    """The no-work graph with the topic graph's state, nodes, routes and input schema.

    Not the floor the ratio is taken against (that one has the shape of the steps only): it
    tells what LangGraph charges for the topic graph's state itself (its 39 channels, nodes
    that name their successor in a ``Command``, a working set that grows until a split), so
    that ``bench overhead`` can say which part of the ratio is the state's and which the
    nodes' work.
    """
    builder = StateGraph(TopicState, input_schema=InputState, output_schema=TopicState)
    for node in ("split", "activate", "search_memory", "end_context"):  # off the chat path
        builder.add_node(node, _nothing)
    builder.add_node("estimate", _shaped_estimate, destinations=("split", "recall_cue", END))
    builder.add_node(
        "recall_cue", _shaped_recall_cue, destinations=("activate", "topic_window", "assemble")
    )
    builder.add_node("topic_window", _shaped_topic_window, input_schema=TopicWindowInput)
    builder.add_node(
        "assemble", _shaped_assemble, destinations=("activate", "respond", "end_context", END)
    )
    builder.add_node(
        "respond",
        _shaped_respond,
        destinations=("activate", "search_memory", "assemble", "bookkeeping"),
    )
    builder.add_node("bookkeeping", _bookkeeping)
    builder.add_node("inject_workflow", _nothing)  # the card's workflow step, as in the graph
    builder.add_edge(START, "inject_workflow")
    builder.add_edge("inject_workflow", "estimate")
    builder.add_edge("split", "recall_cue")
    builder.add_edge("activate", "assemble")
    builder.add_edge("search_memory", "assemble")
    builder.add_edge("topic_window", "assemble")
    builder.add_edge("end_context", END)
    builder.add_edge("bookkeeping", END)
    return builder.compile(checkpointer=open_sqlite_checkpointer(path))


class FloorThread:
    """A thread of the floor graph holding ``working`` messages and ``topics`` topics.

    ``state_shaped``: the graph of :func:`build_state_shaped_floor_graph` instead.
    """

    def __init__(
        self,
        path: Path,
        *,
        topics: int,
        active: int,
        working: Sequence[str],
        state_shaped: bool = False,
    ) -> None:
        self.graph = (build_state_shaped_floor_graph if state_shaped else build_floor_graph)(path)
        self.config: RunnableConfig = {
            "configurable": {"thread_id": "t"},
            "recursion_limit": 100,
            "max_concurrency": Settings().max_active,
        }
        registry = {
            f"topic-{n:06d}": {
                "id": f"topic-{n:06d}",
                "name": f"topic {n}",
                "status": "active" if n < active else "dormant",
                "parent_id": None,
                "scores": [0.6],
                "created_at": "2024-01-01T00:00:00+00:00",
                "last_active_at": "2024-01-01T00:00:00+00:00",
                "message_count": 0,
            }
            for n in range(topics)
        }
        seeded = [
            (HumanMessage if n % 2 == 0 else AIMessage)(text, id=f"w{n}")
            for n, text in enumerate(working)
        ]
        self.graph.update_state(
            self.config, {"messages": seeded, "topics": registry, "turn": 0}, as_node="bookkeeping"
        )

    def turn(self, text: str) -> None:
        """One turn: a user message in, the no-work steps, one checkpoint."""
        self.graph.invoke(
            {"messages": [HumanMessage(text)]},
            self.config,
            durability=DURABILITY,
        )
