"""Check a workflow DAG given by an application before anything is written (invariant 7).

Every problem is one line naming where it is (``dag.json: edges[3]: unknown node 'deploy'``):
a missing or duplicate node id, an edge naming an unknown node, a status that is not one of
``completed``, ``running``, ``pending``, ``failed``, an unknown key, a cycle.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from langgraph_topics.errors import InputError
from langgraph_topics.workflow.records import NODE_STATUSES, NodeStatus, WorkflowDag, WorkflowNode

DAG_KEYS = ("id", "name", "nodes", "edges")
NODE_KEYS = ("id", "name", "status", "summary")
DEFAULT_WORKFLOW_ID = "workflow"


def check_status(status: object, where: str) -> NodeStatus:
    """``status`` if it is a node status, else an ``InputError`` naming ``where``."""
    if status not in NODE_STATUSES:
        raise InputError(f"{where}: status {status!r} is not one of {', '.join(NODE_STATUSES)}")
    return cast(NodeStatus, status)


def _text(value: object, where: str, *, required: bool = False) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        wanted = "a non-empty string" if required else "a string"
        raise InputError(f"{where}: must be {wanted}, got {value!r}")
    return value


def _unknown_keys(record: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    for key in record:
        if key not in allowed:
            raise InputError(f"{where}: unknown key {key!r} (expected {', '.join(allowed)})")


def _node(raw: object, where: str) -> WorkflowNode:
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: a node must be an object with an id, got {raw!r}")
    _unknown_keys(raw, NODE_KEYS, where)
    node_id = _text(raw.get("id"), f"{where}.id", required=True)
    return {
        "id": node_id,
        "name": _text(raw.get("name"), f"{where}.name") or node_id,
        "status": check_status(raw.get("status", "pending"), f"{where} ({node_id!r})"),
        "summary": _text(raw.get("summary"), f"{where}.summary"),
    }


def _edge(raw: object, where: str) -> list[str]:
    if isinstance(raw, Mapping) and set(raw) == {"from", "to"}:
        pair = [raw["from"], raw["to"]]
    elif isinstance(raw, Sequence) and not isinstance(raw, str) and len(raw) == 2:
        pair = list(raw)
    else:
        raise InputError(
            f'{where}: an edge is [from_id, to_id] or {{"from": ..., "to": ...}}, got {raw!r}'
        )
    return [_text(end, where, required=True) for end in pair]


def find_cycle(node_ids: Sequence[str], edges: Sequence[Sequence[str]]) -> list[str] | None:
    """A cycle of the graph as ``[a, b, …, a]``, or None when it is acyclic."""
    children: dict[str, list[str]] = {node_id: [] for node_id in node_ids}
    for source, target in edges:
        children[source].append(target)
    state: dict[str, int] = {}  # 1: on the current walk, 2: done
    for start in node_ids:
        if state.get(start):
            continue
        walk: list[tuple[str, int]] = [(start, 0)]
        state[start] = 1
        while walk:
            node_id, next_child = walk[-1]
            if next_child < len(children[node_id]):
                walk[-1] = (node_id, next_child + 1)
                child = children[node_id][next_child]
                if state.get(child) == 1:
                    on_walk = [n for n, _ in walk]
                    return [*on_walk[on_walk.index(child) :], child]
                if not state.get(child):
                    state[child] = 1
                    walk.append((child, 0))
            else:
                state[node_id] = 2
                walk.pop()
    return None


def parse_dag(data: object, origin: str = "workflow") -> WorkflowDag:
    """Check a DAG (a JSON object or the same in Python) and return it with defaults filled in.

    Args:
        data: ``{"id", "name", "nodes": [{"id", "name", "status", "summary"}], "edges"}``;
            only ``nodes`` is required, a node's ``status`` defaults to ``pending``, an edge is
            ``[from_id, to_id]`` or ``{"from": from_id, "to": to_id}``.
        origin: What the DAG came from, named first in every error (a file name).

    Raises:
        InputError: The first problem found, as one line.
    """
    if not isinstance(data, Mapping):
        raise InputError(f"{origin}: a workflow must be a JSON object with nodes and edges")
    _unknown_keys(data, DAG_KEYS, origin)
    raw_nodes = data.get("nodes")
    if not isinstance(raw_nodes, list):
        raise InputError(f"{origin}: nodes must be a list of node objects")
    raw_edges = data.get("edges", [])
    if not isinstance(raw_edges, list):
        raise InputError(f"{origin}: edges must be a list of [from_id, to_id] pairs")
    nodes: list[WorkflowNode] = []
    first_seen: dict[str, int] = {}
    for place, raw in enumerate(raw_nodes):
        node = _node(raw, f"{origin}: nodes[{place}]")
        if node["id"] in first_seen:
            raise InputError(
                f"{origin}: nodes[{place}]: duplicate node id {node['id']!r} "
                f"(first at nodes[{first_seen[node['id']]}])"
            )
        first_seen[node["id"]] = place
        nodes.append(node)
    edges: list[list[str]] = []
    for place, raw in enumerate(raw_edges):
        edge = _edge(raw, f"{origin}: edges[{place}]")
        for end in edge:
            if end not in first_seen:
                raise InputError(f"{origin}: edges[{place}]: unknown node {end!r}")
        if edge[0] == edge[1]:
            raise InputError(f"{origin}: edges[{place}]: node {edge[0]!r} points to itself")
        if edge not in edges:
            edges.append(edge)
    cycle = find_cycle(list(first_seen), edges)
    if cycle is not None:
        raise InputError(f"{origin}: the edges form a cycle: {' -> '.join(cycle)}")
    workflow_id = _text(data.get("id"), f"{origin}: id") or DEFAULT_WORKFLOW_ID
    return {
        "id": workflow_id,
        "name": _text(data.get("name"), f"{origin}: name") or workflow_id,
        "nodes": nodes,
        "edges": edges,
    }


def read_dag_file(path: Path) -> WorkflowDag:
    """Read and check a DAG from a JSON file (errors name ``path``, and the line for bad JSON)."""
    try:
        text = Path(path).read_text("utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a JSON file") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(
            f"{path}:{error.lineno}:{error.colno}: not valid JSON: {error.msg}"
        ) from None
    return parse_dag(data, str(path))
