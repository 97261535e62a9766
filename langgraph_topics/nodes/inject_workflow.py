"""First step of a turn: load the thread's workflow and keep its active path (seed 001 T4).

The assembler renders the path at the top of the system prompt, within the budget. A thread
without a workflow is left exactly as it was (no state key is written, so its prompt is
byte-identical to a graph without this node); a workflow that cannot be loaded is skipped with
one warning line, and the turn goes on without it.
"""

from __future__ import annotations

import logging
from typing import Any

from langgraph.runtime import Runtime

from langgraph_topics.errors import first_line
from langgraph_topics.services import TopicContext, services_of, thread_id_of
from langgraph_topics.state.schema import TopicState
from langgraph_topics.workflow.active_path import active_path
from langgraph_topics.workflow.protocol import WorkflowUnavailable
from langgraph_topics.workflow.validation import parse_dag

log = logging.getLogger(__name__)


def inject_workflow(state: TopicState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Keep the active path of the thread's workflow in ``workflow`` (cleared when it has none)."""
    had_one = state.get("workflow") is not None
    if (state.get("mode") or "chat") == "import":  # an import assembles no window
        return {}
    services = services_of(runtime)
    thread_id = thread_id_of(runtime)
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
