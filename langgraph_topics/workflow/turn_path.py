"""The thread's workflow at the start of a turn: load it and keep its active path (seed 001 T4).

The graph's first node, ``inject_workflow``, calls this and writes the path into the state;
``estimate`` then counts its block as part of the system prompt, and the assembler renders it
at the top of that prompt, within the budget. A thread without a workflow is left exactly as
it was (no state key is written, so its prompt is byte-identical to a graph without
workflows); a workflow that cannot be loaded is skipped with one warning line, and the turn
goes on without it.
"""

from __future__ import annotations

import logging
from typing import Any

from langgraph_topics.errors import first_line
from langgraph_topics.services import TopicServices
from langgraph_topics.state.schema import TopicState
from langgraph_topics.workflow.active_path import active_path
from langgraph_topics.workflow.protocol import WorkflowUnavailable
from langgraph_topics.workflow.validation import parse_dag

log = logging.getLogger(__name__)


def workflow_update(state: TopicState, services: TopicServices, thread_id: str) -> dict[str, Any]:
    """``{"workflow": path}`` for this turn (``None`` when it has none), or ``{}``: unchanged.

    An import or a split run assembles no window, so it reads no workflow; neither does a
    thread that never had one and has none now.
    """
    had_one = state.get("workflow") is not None
    if (state.get("mode") or "chat") in ("import", "split"):
        return {}
    source = services.workflows.source_for(thread_id, services.settings.data_dir)
    if source is None:
        return {"workflow": None} if had_one else {}
    try:
        # A source the application wrote may hand back anything: check it like an input.
        dag = parse_dag(source.load(), "workflow")
    except Exception as error:  # a workflow never fails the turn (seed 001 T4, decision 3)
        shown = str(error) if isinstance(error, WorkflowUnavailable) else first_line(error)
        log.warning("thread %s: workflow skipped: %s", thread_id, shown)
        return {"workflow": None} if had_one else {}
    return {"workflow": active_path(dag)}
