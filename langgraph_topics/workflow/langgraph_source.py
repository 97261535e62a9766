"""A LangGraph graph as a workflow: its nodes and edges, its progress from a thread's checkpoints.

``LangGraphWorkflow(app, config)`` reads, at the start of every turn:

- the steps and edges from ``app.get_graph()`` (``__start__`` and ``__end__`` left out);
- each step's status from the checkpoint history of ``config``'s thread: a step in ``next``
  of the newest checkpoint is running (failed when its task holds an error); a step that ran
  in an earlier checkpoint of the history is completed; every other step is pending;
- each completed step's output summary from what its last run wrote (message text, or
  ``key: value`` pairs), cut short.

Progress is only as fine as the thread's checkpoints: a graph run with ``durability="exit"``
keeps only the last step's checkpoint, so the steps before it show as pending. The source
lives in memory (a compiled graph cannot be written to a file); set it again after a restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from langgraph_topics.errors import first_line
from langgraph_topics.workflow.protocol import WorkflowUnavailable
from langgraph_topics.workflow.records import NodeStatus, WorkflowDag, WorkflowNode
from langgraph_topics.workflow.validation import find_cycle

SUMMARY_CHARS = 300
"""An output summary taken from a step's writes is cut to this many characters."""
GRAPH_ENDS = ("__start__", "__end__")


def summarize_output(result: object, limit: int = SUMMARY_CHARS) -> str:
    """A one-line summary of what a step wrote: message text, else ``key: value`` pairs."""
    if result is None:
        return ""
    if isinstance(result, Mapping):
        parts = [f"{key}: {summarize_output(value, limit)}" for key, value in result.items()]
        text = "; ".join(part for part in parts if not part.endswith(": "))
    elif isinstance(result, BaseMessage):
        text = result.text
    elif isinstance(result, list | tuple):
        messages = [item for item in result if isinstance(item, BaseMessage)]
        text = messages[-1].text if messages else ", ".join(str(item) for item in result)
    else:
        text = str(result)
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass
class LangGraphWorkflow:
    """A compiled LangGraph graph and one of its threads, as a workflow source.

    Args:
        app: The application's compiled graph (it must have a checkpointer for the statuses).
        config: The run config of the thread whose progress is shown
            (``{"configurable": {"thread_id": "..."}}``).
        name: The workflow's name (the graph's ``name`` by default).
        workflow_id: Its id (the thread id by default).
    """

    app: Any
    config: RunnableConfig
    name: str | None = None
    workflow_id: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    """Optional display names for graph nodes (a node's name is its id otherwise)."""

    def load(self) -> WorkflowDag:
        """The graph's steps with their statuses now.

        Raises:
            WorkflowUnavailable: The graph or its checkpoints cannot be read.
        """
        try:
            drawn = self.app.get_graph()
            history = list(self.app.get_state_history(self.config))
        except Exception as error:  # any failure of the application's graph skips the block
            raise WorkflowUnavailable(f"LangGraph workflow: {first_line(error)}") from error
        node_ids = [str(node_id) for node_id in drawn.nodes if node_id not in GRAPH_ENDS]
        known = set(node_ids)
        edges: list[list[str]] = []
        for edge in drawn.edges:
            pair = [str(edge.source), str(edge.target)]
            if pair[0] in known and pair[1] in known and pair[0] != pair[1] and pair not in edges:
                edges.append(pair)
        # A graph may loop (a review step sending work back); the path needs a DAG, so the
        # edges that close a loop are left out.
        while (cycle := find_cycle(node_ids, edges)) is not None:
            edges.remove([cycle[-2], cycle[-1]])
        statuses, summaries = self._progress(history)
        nodes: list[WorkflowNode] = [
            {
                "id": node_id,
                "name": self.labels.get(node_id, node_id),
                "status": statuses.get(node_id, "pending"),
                "summary": summaries.get(node_id, ""),
            }
            for node_id in node_ids
        ]
        configurable = self.config.get("configurable") or {}
        workflow_id = self.workflow_id or str(configurable.get("thread_id", "workflow"))
        return {
            "id": workflow_id,
            "name": self.name or str(getattr(self.app, "name", "") or workflow_id),
            "nodes": nodes,
            "edges": edges,
        }

    @staticmethod
    def _progress(history: list[Any]) -> tuple[dict[str, NodeStatus], dict[str, str]]:
        """Statuses and output summaries from a thread's history (newest checkpoint first)."""
        statuses: dict[str, NodeStatus] = {}
        summaries: dict[str, str] = {}
        for age, snapshot in enumerate(history):
            for task in snapshot.tasks:
                if task.name in GRAPH_ENDS:
                    continue
                if age == 0:  # the newest checkpoint: what runs next (or failed running)
                    statuses[task.name] = "failed" if task.error is not None else "running"
                    continue
                statuses.setdefault(task.name, "completed")
                if task.name not in summaries and task.result is not None:
                    summaries[task.name] = summarize_output(task.result)
        return statuses, summaries
