"""Typed records of a workflow DAG and of the active path the main window shows (seed 001 T4).

Plain ``TypedDict``s, like every record of this package: they serialise into the thread's
workflow file and into checkpoints as they are, and Studio shows them as they are.
"""

from __future__ import annotations

from typing import Literal, NotRequired, get_args

from typing_extensions import TypedDict

NodeStatus = Literal["completed", "running", "pending", "failed"]
NODE_STATUSES: tuple[str, ...] = get_args(NodeStatus)


class WorkflowNode(TypedDict):
    """One step of a workflow."""

    id: str
    name: str
    """What the step does, as the model is shown it (the id when none was given)."""
    status: NodeStatus
    summary: str
    """The step's output summary ("timeout:15 is on line 15"); empty when it has none."""


class WorkflowDag(TypedDict):
    """A workflow: its steps and the edges between them (checked acyclic, see ``validation``)."""

    id: str
    name: str
    nodes: list[WorkflowNode]
    """In the order the application gave them (ties between branches follow it)."""
    edges: list[list[str]]
    """``[from_id, to_id]`` pairs: ``to`` runs after ``from``."""


class WorkflowCounts(TypedDict):
    """How many steps of the whole workflow are in each status."""

    completed: int
    running: int
    pending: int
    failed: int
    total: int


class PathNode(TypedDict):
    """A step on the active path: the path from the root to the current step, then what follows."""

    id: str
    name: str
    status: NodeStatus
    summary: str
    level: int
    """0 on the path from the root to the current step; 1 or 2 for the steps that follow it."""
    after: NotRequired[str]
    """For a level-2 step, the level-1 step it follows."""


class ActivePath(TypedDict):
    """What the main window shows of a workflow: the active path and the counts, nothing else."""

    workflow_id: str
    name: str
    current: str | None
    """Id of the current step (None for a workflow without steps)."""
    path: list[PathNode]
    """Root first, the current step last."""
    successors: list[PathNode]
    """Up to two levels of steps after the current one, as a tree: each level-1 step, then the
    level-2 steps that follow it."""
    counts: WorkflowCounts
