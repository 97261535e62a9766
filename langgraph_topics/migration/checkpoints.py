"""Copy a thread's checkpoints from one saver to another, ids, parents and pending writes kept.

The savers' public API carries everything (``list``, ``put``, ``put_writes``) but the task
path of pending writes, read from the SQLite table; the history a graph shows
(``get_state_history``, time travel, forks) is then the same on both sides. A checkpoint is
written with every channel version as ``new_versions``: a saver that keeps channel values apart
from the checkpoint (Postgres' blobs, keyed by channel and version) then stores each value the
checkpoint holds. Versions are random-suffixed strings, so values of two branches never collide.

Checkpoints are copied oldest first, each with its pending writes right after it; a copy cut
short leaves a prefix of the history, which the next run completes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    CheckpointTuple,
    PendingWrite,
)
from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_topics.migration.conflicts import ThreadConflict

_TASK_PATHS = (
    "SELECT DISTINCT task_id, task_path FROM writes"
    " WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
)


def _key(checkpoint: CheckpointTuple) -> tuple[str, str]:
    configurable = checkpoint.config["configurable"]
    return configurable.get("checkpoint_ns", ""), configurable["checkpoint_id"]


def _writes(checkpoint: CheckpointTuple) -> list[PendingWrite]:
    return list(checkpoint.pending_writes or [])


def _parent_id(checkpoint: CheckpointTuple) -> str | None:
    if checkpoint.parent_config is None:
        return None
    parent: str | None = checkpoint.parent_config["configurable"].get("checkpoint_id")
    return parent


def thread_checkpoints(saver: BaseCheckpointSaver[Any], thread_id: str) -> list[CheckpointTuple]:
    """Every checkpoint of a thread, in every namespace, oldest first."""
    listed = list(saver.list({"configurable": {"thread_id": thread_id}}))
    return sorted(listed, key=_key_order)


def _key_order(checkpoint: CheckpointTuple) -> tuple[str, str]:
    # Checkpoint ids are uuid6, so their order is the order they were written in.
    namespace, checkpoint_id = _key(checkpoint)
    return checkpoint_id, namespace


def _task_paths(
    saver: SqliteSaver, thread_id: str, namespace: str, checkpoint_id: str
) -> dict[str, str]:
    """The task path of each task with pending writes (``CheckpointTuple`` leaves it out).

    The path orders the writes of several tasks when they are applied, so it is copied too.
    """
    with saver.cursor(transaction=False) as cursor:
        try:
            rows = cursor.execute(_TASK_PATHS, (thread_id, namespace, checkpoint_id)).fetchall()
        except sqlite3.OperationalError:  # a database from before task paths: all are ""
            return {}
    return {task_id: task_path or "" for task_id, task_path in rows}


def _same_checkpoint(source: CheckpointTuple, target: CheckpointTuple) -> bool:
    ours, theirs = source.checkpoint, target.checkpoint
    return (
        _parent_id(source) == _parent_id(target)
        and ours["ts"] == theirs["ts"]
        and dict(ours["channel_versions"]) == dict(theirs["channel_versions"])
        and dict(ours["channel_values"]) == dict(theirs["channel_values"])
        and _comparable_metadata(source) == _comparable_metadata(target)
    )


def _comparable_metadata(checkpoint: CheckpointTuple) -> dict[str, Any]:
    # Savers drop "writes" from stored metadata (older LangGraph versions wrote it).
    return {key: value for key, value in checkpoint.metadata.items() if key != "writes"}


def _writes_by_task(
    writes: Sequence[PendingWrite],
) -> dict[str, tuple[list[tuple[str, Any]], list[tuple[str, Any]]]]:
    """Each task's writes as (regular writes in order, special writes such as errors)."""
    grouped: dict[str, tuple[list[tuple[str, Any]], list[tuple[str, Any]]]] = {}
    for task_id, channel, value in writes:
        regular, special = grouped.setdefault(task_id, ([], []))
        (special if channel in WRITES_IDX_MAP else regular).append((channel, value))
    return grouped


def _put_writes(
    target: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    writes: Sequence[PendingWrite],
    task_paths: dict[str, str],
) -> None:
    # Regular writes are numbered by their place in one call, special ones by their channel
    # (WRITES_IDX_MAP): one call each keeps the numbers the source gave them.
    for task_id, (regular, special) in _writes_by_task(writes).items():
        path = task_paths.get(task_id, "")
        if regular:
            target.put_writes(config, regular, task_id, path)
        for write in special:
            target.put_writes(config, [write], task_id, path)


@dataclass(frozen=True)
class CheckpointPlan:
    """What copying a thread's checkpoints has to do, checked against the target."""

    thread_id: str
    total: int
    """Checkpoints the source holds (every namespace)."""
    to_copy: list[CheckpointTuple]
    """Source checkpoints the target lacks, oldest first."""
    unfinished_writes: list[CheckpointTuple]
    """Source checkpoints the target holds without all their pending writes."""
    behind: CheckpointTuple | None = None
    """The target's newest checkpoint when the source no longer holds it (deleted by the
    source's retention since an earlier run): the caller checks that the source's thread
    went on from it (``ThreadConflict`` otherwise)."""


def plan_checkpoints(
    source: SqliteSaver, target: BaseCheckpointSaver[Any], thread_id: str
) -> CheckpointPlan:
    """Compare a thread's checkpoints on both sides; nothing is written.

    The target may hold a copy made by an earlier run while the source went on: checkpoints
    older than every one the source kept are those its retention deleted since, and are left
    alone. Any other checkpoint the source does not hold is another history.

    Raises:
        ThreadConflict: The target holds a checkpoint of the thread that is newer than the
            source's oldest and that the source does not hold, or one with other values,
            metadata, parent or pending writes.
    """
    wanted = thread_checkpoints(source, thread_id)
    by_key = {_key(c): c for c in wanted}
    oldest_kept: dict[str, str] = {}
    for namespace, checkpoint_id in by_key:  # oldest first
        oldest_kept.setdefault(namespace, checkpoint_id)
    held = thread_checkpoints(target, thread_id)
    present: set[tuple[str, str]] = set()
    unfinished: list[CheckpointTuple] = []
    for theirs in held:
        key = _key(theirs)
        ours = by_key.get(key)
        if ours is None:
            namespace, checkpoint_id = key
            if checkpoint_id < oldest_kept.get(namespace, ""):  # pruned on the source since
                continue
            raise ThreadConflict(
                thread_id, f"the target has checkpoint {checkpoint_id} that the source does not"
            )
        if not _same_checkpoint(ours, theirs):
            raise ThreadConflict(thread_id, f"checkpoint {key[1]} differs from the source's")
        if any(write not in _writes(ours) for write in _writes(theirs)):
            raise ThreadConflict(
                thread_id, f"checkpoint {key[1]} has pending writes the source does not"
            )
        present.add(key)
        if len(_writes(theirs)) < len(_writes(ours)):
            unfinished.append(ours)
    newest = held[-1] if held else None
    return CheckpointPlan(
        thread_id=thread_id,
        total=len(wanted),
        to_copy=[c for c in wanted if _key(c) not in present],
        unfinished_writes=unfinished,
        behind=newest if newest is not None and _key(newest) not in present else None,
    )


def copy_checkpoints(
    source: BaseCheckpointSaver[Any],
    target: BaseCheckpointSaver[Any],
    plan: CheckpointPlan,
    *,
    on_copied: Callable[[int, int], None] | None = None,
) -> int:
    """Write what ``plan`` found missing: checkpoints oldest first, each with its writes.

    Args:
        source: The saver the plan was made from: the embedded checkpoint database (whose
            task paths of pending writes are copied too), or the target itself (a thread
            copied under another id, ``migration/user_scope.py``: paths left empty).
        target: The saver to copy into (a ``PostgresSaver``, set up).
        plan: ``plan_checkpoints`` of the thread, made just before (under the thread's locks).
        on_copied: Called after each checkpoint written, with (written so far, to write).

    Returns:
        How many checkpoints were written.
    """
    for checkpoint in plan.unfinished_writes:
        # A run cut short between a checkpoint and its writes: writes are upserts.
        configurable = {**checkpoint.config["configurable"], "thread_id": plan.thread_id}
        _put_writes(
            target,
            {"configurable": configurable},
            _writes(checkpoint),
            _paths(source, checkpoint),
        )
    for done, checkpoint in enumerate(plan.to_copy, start=1):
        _copy_one(source, target, plan.thread_id, checkpoint)
        if on_copied is not None:
            on_copied(done, len(plan.to_copy))
    return len(plan.to_copy)


def _paths(source: BaseCheckpointSaver[Any], checkpoint: CheckpointTuple) -> dict[str, str]:
    if not checkpoint.pending_writes or not isinstance(source, SqliteSaver):
        return {}
    namespace, checkpoint_id = _key(checkpoint)
    thread_id = checkpoint.config["configurable"]["thread_id"]
    return _task_paths(source, thread_id, namespace, checkpoint_id)


def _copy_one(
    source: BaseCheckpointSaver[Any],
    target: BaseCheckpointSaver[Any],
    thread_id: str,
    checkpoint: CheckpointTuple,
) -> None:
    namespace, _ = _key(checkpoint)
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": namespace}
    parent = _parent_id(checkpoint)
    if parent is not None:  # the saver takes the parent link from the config's checkpoint id
        configurable["checkpoint_id"] = parent
    data = checkpoint.checkpoint
    written = target.put(
        {"configurable": configurable},
        data,
        checkpoint.metadata,
        dict(data["channel_versions"]),
    )
    if _writes(checkpoint):
        _put_writes(target, written, _writes(checkpoint), _paths(source, checkpoint))
