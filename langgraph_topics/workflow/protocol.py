"""Where a thread's workflow comes from: anything that can load a DAG when a turn starts."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from langgraph_topics.workflow.records import WorkflowDag


class WorkflowUnavailable(RuntimeError):
    """A workflow source could not produce its DAG (a file gone bad, a graph that fails).

    The turn goes on without the workflow block (seed 001 T4, decision 3).
    """


@runtime_checkable
class WorkflowSource(Protocol):
    """A source of a thread's workflow DAG, read afresh at the start of every turn."""

    def load(self) -> WorkflowDag:
        """The workflow as it stands now.

        Raises:
            WorkflowUnavailable: The workflow cannot be loaded now (any other exception is
                treated the same way: the turn never fails because of its workflow).
        """
        ...
