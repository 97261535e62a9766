"""Which workflow a thread has: a source the application attached in memory, else its file."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from langgraph_topics.workflow.protocol import WorkflowSource
from langgraph_topics.workflow.stored import StoredWorkflow, workflow_file


@dataclass
class WorkflowSources:
    """The in-memory workflow sources of a memory's threads (LangGraph graphs, custom ones).

    Sources attached here win over a thread's stored DAG; they are not persisted.
    """

    _attached: dict[str, WorkflowSource] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def attach(self, thread_id: str, source: WorkflowSource) -> None:
        """Make ``source`` the workflow of ``thread_id`` in this process."""
        with self._lock:
            self._attached[thread_id] = source

    def detach(self, thread_id: str) -> bool:
        """Forget the attached source of ``thread_id``; whether there was one."""
        with self._lock:
            return self._attached.pop(thread_id, None) is not None

    def source_for(self, thread_id: str, data_dir: str | Path) -> WorkflowSource | None:
        """The thread's workflow source: the attached one, else its stored DAG, else None."""
        with self._lock:
            attached = self._attached.get(thread_id)
        if attached is not None:
            return attached
        stored = StoredWorkflow(workflow_file(data_dir, thread_id))
        return stored if stored.exists() else None
