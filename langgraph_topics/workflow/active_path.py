"""The active path of a workflow (seed 001 T4, decision 1): never the whole DAG.

From the root to the current step, then two levels of the steps that follow it. A 50-step DAG
is therefore shown as a handful of lines, with the counts of the whole workflow beside them.

The current step is the first running step (in topological order); failing that the first
failed one, the first pending step whose predecessors all completed, any pending step, and
for a finished workflow its last step. The path back to the root follows, at a join, the
predecessor that completed (the one that led here), the earliest given first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from langgraph_topics.workflow.records import (
    ActivePath,
    PathNode,
    WorkflowCounts,
    WorkflowDag,
    WorkflowNode,
)


def topological_order(dag: WorkflowDag) -> list[str]:
    """Node ids in an order where every edge points forward (given order breaks ties)."""
    position = {node["id"]: place for place, node in enumerate(dag["nodes"])}
    waiting = {node_id: 0 for node_id in position}
    children = _neighbours(dag, upstream=False)
    for _, target in dag["edges"]:
        waiting[target] += 1
    ready = [node_id for node_id in position if waiting[node_id] == 0]
    order: list[str] = []
    while ready:
        ready.sort(key=position.__getitem__)
        node_id = ready.pop(0)
        order.append(node_id)
        for child in children[node_id]:
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    return order


def _neighbours(dag: WorkflowDag, *, upstream: bool) -> dict[str, list[str]]:
    """Each step's successors (or, ``upstream``, predecessors), in the DAG's node order."""
    position = {node["id"]: place for place, node in enumerate(dag["nodes"])}
    linked: dict[str, list[str]] = {node_id: [] for node_id in position}
    for source, target in dag["edges"]:
        if upstream:
            linked[target].append(source)
        else:
            linked[source].append(target)
    for listed in linked.values():
        listed.sort(key=position.__getitem__)
    return linked


def count_statuses(nodes: Sequence[WorkflowNode]) -> WorkflowCounts:
    """How many steps are in each status."""
    counts: WorkflowCounts = {
        "completed": 0,
        "running": 0,
        "pending": 0,
        "failed": 0,
        "total": len(nodes),
    }
    for node in nodes:
        counts[node["status"]] += 1
    return counts


def current_step(
    order: Sequence[str], nodes: Mapping[str, WorkflowNode], parents: Mapping[str, list[str]]
) -> str | None:
    """The step the workflow is at (see the module docstring)."""
    for wanted in ("running", "failed"):
        found = next((n for n in order if nodes[n]["status"] == wanted), None)
        if found is not None:
            return found
    pending = [n for n in order if nodes[n]["status"] == "pending"]
    for node_id in pending:
        if all(nodes[p]["status"] == "completed" for p in parents[node_id]):
            return node_id
    if pending:
        return pending[0]
    return order[-1] if order else None


def _path_node(node: WorkflowNode, level: int) -> PathNode:
    return {
        "id": node["id"],
        "name": node["name"],
        "status": node["status"],
        "summary": node["summary"],
        "level": level,
    }


def active_path(dag: WorkflowDag) -> ActivePath:
    """The root-to-current path and two levels of successors, with the whole DAG's counts."""
    nodes = {node["id"]: node for node in dag["nodes"]}
    parents = _neighbours(dag, upstream=True)
    children = _neighbours(dag, upstream=False)
    order = topological_order(dag)
    current = current_step(order, nodes, parents)
    path: list[PathNode] = []
    successors: list[PathNode] = []
    if current is not None:
        back = [current]
        while parents[back[-1]]:
            options = parents[back[-1]]
            back.append(next((p for p in options if nodes[p]["status"] == "completed"), options[0]))
        path = [_path_node(nodes[node_id], 0) for node_id in reversed(back)]
        seen = set(back)
        level_one = [c for c in children[current] if c not in seen]
        seen.update(level_one)
        for child in level_one:
            successors.append(_path_node(nodes[child], 1))
            for grandchild in children[child]:
                if grandchild in seen:
                    continue
                seen.add(grandchild)
                successors.append({**_path_node(nodes[grandchild], 2), "after": child})
    return {
        "workflow_id": dag["id"],
        "name": dag["name"],
        "current": current,
        "path": path,
        "successors": successors,
        "counts": count_statuses(dag["nodes"]),
    }
