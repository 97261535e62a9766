"""A DAG given by the application, kept per thread in the data directory.

One JSON file a thread, ``<data-dir>/workflows/<thread-dir>.json``, beside (not inside) the
thread's directory: the topic stores are re-opened whenever a file of their directory changes,
and a workflow update must not cost that. Files are replaced whole (``replace_durably``), and
an update (read, change, write) holds a lock file, so two updaters never lose each other's
change.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from langgraph_topics.errors import InputError, ThreadBusyError
from langgraph_topics.stores.durable import replace_durably
from langgraph_topics.stores.file_lock import FileLock
from langgraph_topics.workflow.protocol import WorkflowUnavailable
from langgraph_topics.workflow.records import WorkflowDag
from langgraph_topics.workflow.validation import check_status, parse_dag

WORKFLOWS_DIR = "workflows"
LOCK_SECONDS = 10.0


def workflow_file(data_dir: str | Path, thread_id: str) -> Path:
    """Where the DAG the application gave to ``thread_id`` is kept."""
    from langgraph_topics.services import thread_directory_name  # services hold the sources

    return Path(data_dir) / WORKFLOWS_DIR / f"{thread_directory_name(thread_id)}.json"


@dataclass(frozen=True)
class StoredWorkflow:
    """The workflow file of one thread (a ``WorkflowSource``)."""

    path: Path

    def exists(self) -> bool:
        """Whether a workflow was set (and not cleared) for the thread."""
        return self.path.is_file()

    def load(self) -> WorkflowDag:
        """The stored DAG, checked again (the file may have been edited by hand).

        Raises:
            WorkflowUnavailable: The file is gone, unreadable or no longer a valid DAG.
        """
        try:
            text = self.path.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise WorkflowUnavailable(f"{self.path}: cannot be read ({error})") from error
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            place = f"{self.path}:{error.lineno}:{error.colno}"
            raise WorkflowUnavailable(f"{place}: not valid JSON: {error.msg}") from error
        try:
            return parse_dag(data, str(self.path))
        except InputError as error:
            raise WorkflowUnavailable(str(error)) from error

    def save(self, dag: WorkflowDag) -> None:
        """Replace the stored DAG (checked first: nothing is written for an invalid one)."""
        checked = parse_dag(dict(dag), "workflow")
        with self._locked():
            self._write(checked)

    def clear(self) -> bool:
        """Forget the thread's workflow; whether there was one."""
        with self._locked():
            try:
                self.path.unlink()
            except FileNotFoundError:
                return False
            return True

    def update_node(
        self, node_id: str, *, status: str | None = None, summary: str | None = None
    ) -> WorkflowDag:
        """Change one step's status and/or output summary; returns the updated DAG.

        Raises:
            InputError: No workflow is set, no step has ``node_id``, or the status is invalid.
        """
        checked_status = None if status is None else check_status(status, f"node {node_id!r}")
        if summary is not None and not isinstance(summary, str):
            raise InputError(f"node {node_id!r}: summary must be a string, got {summary!r}")
        with self._locked():
            if not self.exists():
                raise InputError(f"{self.path.name}: no workflow is set for this thread")
            try:
                dag = self.load()
            except WorkflowUnavailable as error:
                raise InputError(str(error)) from None
            node = next((n for n in dag["nodes"] if n["id"] == node_id), None)
            if node is None:
                known = ", ".join(n["id"] for n in dag["nodes"][:10])
                raise InputError(
                    f"node {node_id!r}: no such step in workflow {dag['id']!r} ({known})"
                )
            if checked_status is not None:
                node["status"] = checked_status
            if summary is not None:
                node["summary"] = summary
            self._write(dag)
            return dag

    def _write(self, dag: WorkflowDag) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(dag, ensure_ascii=False, indent=1) + "\n"
        replace_durably(self.path, text.encode("utf-8"))

    @contextmanager
    def _locked(self) -> Iterator[None]:
        lock = FileLock(self.path.with_name(f".{self.path.stem}.lock"))
        if not lock.acquire(LOCK_SECONDS):
            raise ThreadBusyError(f"{self.path}: another process is updating this workflow")
        try:
            yield
        finally:
            lock.release()
