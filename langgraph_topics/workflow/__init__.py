"""Workflow-DAG injection (seed 001 T4): what a thread's workflow is, and how the window shows it.

A thread may run inside a workflow. Its source is either a DAG the application gives
(``TopicMemory.set_workflow(thread, dag)``, kept in the data directory) or a LangGraph graph
and one of its threads (``LangGraphWorkflow``, in memory). The first step of every turn,
the node ``inject_workflow``, loads it (``workflow.turn_path``) and keeps its active path
(root to current step, then two levels of successors, with statuses, output summaries and
counts); the assembler renders that at the top of the system prompt, within the budget.

``LangGraphWorkflow`` is loaded on first use (``lazy_exports``): the workflow commands of the
CLI import this package without LangChain.
"""

from typing import TYPE_CHECKING

from langgraph_topics.lazy_exports import lazy_exports
from langgraph_topics.workflow.active_path import active_path
from langgraph_topics.workflow.protocol import WorkflowSource, WorkflowUnavailable
from langgraph_topics.workflow.records import (
    ActivePath,
    NodeStatus,
    PathNode,
    WorkflowCounts,
    WorkflowDag,
    WorkflowNode,
)
from langgraph_topics.workflow.stored import StoredWorkflow, workflow_file
from langgraph_topics.workflow.validation import parse_dag, read_dag_file

if TYPE_CHECKING:
    from langgraph_topics.workflow.langgraph_source import LangGraphWorkflow

__all__ = [
    "ActivePath",
    "LangGraphWorkflow",
    "NodeStatus",
    "PathNode",
    "StoredWorkflow",
    "WorkflowCounts",
    "WorkflowDag",
    "WorkflowNode",
    "WorkflowSource",
    "WorkflowUnavailable",
    "active_path",
    "parse_dag",
    "read_dag_file",
    "workflow_file",
]

__getattr__, __dir__ = lazy_exports(
    __name__, {"LangGraphWorkflow": "langgraph_topics.workflow.langgraph_source"}
)
