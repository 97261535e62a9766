"""First step of a turn: keep the active path of the thread's workflow (seed 001 T4).

A node of its own because the design card names a workflow-DAG injection node and Studio is
where users look for it; the step LangGraph schedules for it is measured in ``bench overhead``
(its row of the breakdown). The path is written into the state, ``estimate`` counts its block
as part of the system prompt, and the assembler renders it at the top of that prompt, within
the budget. Loading and checking the workflow is ``workflow.turn_path``'s: a thread without a
workflow writes no key (its prompt is byte-identical to a graph without this node), and one
that cannot be loaded is skipped with one warning line.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from langgraph_topics.scope.graph_run import claim_first_run
from langgraph_topics.scope.run_scope import check_memory_thread, check_run_scope
from langgraph_topics.services import TopicContext, run_thread_id, services_of, thread_id_of
from langgraph_topics.state.schema import TopicState
from langgraph_topics.workflow.turn_path import workflow_update


def inject_workflow(state: TopicState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Write the turn's workflow path into ``workflow`` (seed 001 T4; cleared when gone).

    Returns ``{}`` for a thread that never had a workflow and has none now, and for an
    import (it assembles no window), so neither changes the state.

    A user-scope run on the application's thread id also records, on the thread's first turn,
    the user's thread its stores are kept as (``check_memory_thread``); the first turn of a
    user's thread checks where its checkpoints are kept (``scope.graph_run.claim_first_run``).

    Raises:
        InputError: The run's thread is stored as another user's, or its checkpoints were
            made in another scope (``scope/run_scope.py``), or kept under another thread id
            (``scope/checkpoint_home.py``).
    """
    thread_id = thread_id_of(runtime)
    check_run_scope(runtime, thread_id)
    # A user-scope run on the application's thread id: its checkpoints and its stores matched.
    run_thread = run_thread_id(runtime)
    mark = check_memory_thread(state, run_thread, thread_id)
    claim_first_run(runtime, state, run_thread, thread_id)
    update = workflow_update(state, services_of(runtime), thread_id)
    return {**mark, **update} if mark else update
