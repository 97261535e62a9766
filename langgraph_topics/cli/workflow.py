"""The ``workflow`` subcommand: ``set``, ``node``, ``show`` and ``clear`` (seed 001 T4).

They work on the thread's stored DAG file alone (no model, no checkpoint is opened), so they
are quick enough to call from a workflow engine after every step.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langgraph_topics.cli.tables import clip, print_json, render_table
from langgraph_topics.errors import InputError
from langgraph_topics.settings import STORE_ENV
from langgraph_topics.workflow.active_path import active_path
from langgraph_topics.workflow.protocol import WorkflowUnavailable
from langgraph_topics.workflow.records import NODE_STATUSES, WorkflowDag
from langgraph_topics.workflow.stored import StoredWorkflow, workflow_file
from langgraph_topics.workflow.validation import read_dag_file


def add_workflow_parser(commands: Any, common: Callable[[argparse.ArgumentParser], None]) -> None:
    """Register ``workflow`` and its actions; ``common`` adds the shared options (--thread …)."""
    workflow = commands.add_parser(
        "workflow",
        help="set, update or show the thread's workflow (its active path tops the prompt)",
        description="Set, update or show the thread's workflow DAG.",
    )
    actions = workflow.add_subparsers(dest="workflow_action", required=True, metavar="ACTION")
    setter = actions.add_parser(
        "set", help="give the thread a workflow from a JSON file (checked before it is written)"
    )
    setter.add_argument("file", type=Path, help="the DAG as a JSON object")
    setter.add_argument(
        "--json", action="store_true", help="print what was set as JSON (the workflow included)"
    )
    common(setter)
    node = actions.add_parser("node", help="change a step's status and/or output summary")
    node.add_argument("node_id", metavar="ID", help="the step's id")
    node.add_argument("--status", choices=NODE_STATUSES, help="the step's new status")
    node.add_argument("--summary", help="the step's output summary (what it produced)")
    node.add_argument("--json", action="store_true", help="print the changed step as JSON")
    common(node)
    show = actions.add_parser("show", help="print the workflow (every step) and its active path")
    show.add_argument("--json", action="store_true", help="print the DAG and active path as JSON")
    common(show)
    clear = actions.add_parser("clear", help="take the thread's workflow away")
    clear.add_argument("--json", action="store_true", help="print whether one was cleared as JSON")
    common(clear)


def run_workflow(args: argparse.Namespace, check_data_dir: Callable[[Any], None]) -> int:
    """Run a ``workflow`` action; errors are ``InputError`` lines (exit status 2)."""
    check_data_dir(args.data_dir)
    stored = StoredWorkflow(workflow_file(args.data_dir, args.thread))
    if args.workflow_action == "set":
        dag = read_dag_file(args.file)
        stored.save(dag)
        if args.json:
            print_json({"thread": args.thread, "action": "set", "workflow": dag})
            return 0
        print(f"workflow {dag['id']!r} set for thread {args.thread!r}: {len(dag['nodes'])} steps")
        return 0
    if args.workflow_action == "node":
        if args.status is None and args.summary is None:
            raise InputError("workflow node: give --status, --summary or both")
        if not stored.exists():
            raise InputError(f"thread {args.thread!r}: no workflow is set (workflow set FILE)")
        dag = stored.update_node(args.node_id, status=args.status, summary=args.summary)
        changed = next(n for n in dag["nodes"] if n["id"] == args.node_id)
        if args.json:
            print_json(
                {"thread": args.thread, "action": "node", "workflow": dag["id"], "step": changed}
            )
            return 0
        print(f"step {changed['id']!r}: {changed['status']}")
        return 0
    if args.workflow_action == "clear":
        gone = stored.clear()
        if args.json:
            print_json({"thread": args.thread, "action": "clear", "cleared": gone})
            return 0
        print(f"workflow of thread {args.thread!r} " + ("cleared" if gone else "was not set"))
        return 0
    return _show(stored, args)


def _require_thread(args: argparse.Namespace) -> None:
    """Refuse ``show`` on a thread the data directory does not hold (a mistyped ``--thread``).

    A thread with a workflow set and no message yet is known by its workflow file.
    """
    from langgraph_topics.cli.existing_data import require_data_dir
    from langgraph_topics.cli.known_threads import thread_on_disk
    from langgraph_topics.cli.opening import unknown_thread

    if os.environ.get(STORE_ENV, "").strip().lower() == "postgres":
        return  # the threads are in the database; the workflow file is all there is here
    require_data_dir(args.data_dir)
    if thread_on_disk(args.data_dir, args.thread) is False:
        raise unknown_thread(args.thread, str(args.data_dir), args.data_dir)


def _show(stored: StoredWorkflow, args: argparse.Namespace) -> int:
    if not stored.exists():
        _require_thread(args)
        if args.json:
            print("null")
        else:
            print(f"thread {args.thread!r} has no workflow")
        return 0
    try:
        dag = stored.load()
    except WorkflowUnavailable as error:
        raise InputError(str(error)) from None
    active = active_path(dag)
    if args.json:
        print_json({"workflow": dag, "active_path": active})
        return 0
    print(_headline(dag, active["current"]))
    on_path = {n["id"] for n in [*active["path"], *active["successors"]]}
    rows = [
        [
            ("> " if n["id"] == active["current"] else "  ") + n["id"],
            n["status"],
            "yes" if n["id"] in on_path else "",
            clip(n["name"], 30),
            clip(n["summary"], 50),
        ]
        for n in dag["nodes"]
    ]
    print(render_table(["step", "status", "shown", "name", "summary"], rows))
    return 0


def _headline(dag: WorkflowDag, current: str | None) -> str:
    counts = {status: 0 for status in NODE_STATUSES}
    for node in dag["nodes"]:
        counts[node["status"]] += 1
    done = ", ".join(f"{counts[s]} {s}" for s in NODE_STATUSES if counts[s])
    return (
        f"workflow {dag['id']!r} ({dag['name']}): {len(dag['nodes'])} steps"
        + (f", {done}" if done else "")
        + (f"; current step {current!r}" if current else "")
    )
