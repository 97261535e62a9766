"""Assign existing plain threads to a user's memory scope (``migrate --user``; issue 40).

Each thread is copied as it is, not re-imported: its checkpoints (ids, parents and pending
writes kept, ``migration/checkpoints.py``: forks and time travel work as before), its topic
files and retrieval index (embedded) or its store items (``postgres``), and its workflow, to
the user-scoped id of the same name; the topic index is rebuilt from the copied topics when
the copy is first opened. The copy is then verified (``check`` holds, and it holds every
message of the source with the same text); only then is the thread recorded as the user's
and, unless kept, the plain thread deleted. A run cut short leaves the plain thread whole:
the partial copy (which no registry names) is deleted and made again by the next run.

Every thread is checked before anything is written: a thread that does not exist, one that
is already a user's, one the user already has, or one with a ``chat`` line still pending is
refused with one line naming it.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from langgraph.store.base import BaseStore

from langgraph_topics.cli.pending_line import PREFIX as PENDING_PREFIX
from langgraph_topics.errors import InputError
from langgraph_topics.migration.checkpoints import (
    CheckpointPlan,
    copy_checkpoints,
    thread_checkpoints,
)
from langgraph_topics.scope.forget import delete_thread
from langgraph_topics.scope.threads import check_user_id, scoped_thread_id
from langgraph_topics.services import thread_directory
from langgraph_topics.stores.base_store_topics import thread_namespace
from langgraph_topics.stores.checkpointed_mark import MARK_FILE, CheckpointedMarks
from langgraph_topics.stores.durable import fsync_directory
from langgraph_topics.thread_ids import check_thread_id, scoped_parts
from langgraph_topics.workflow.stored import workflow_file

if TYPE_CHECKING:
    from langgraph_topics.memory import TopicMemory

PAGE = 500
LEFT_BEHIND = (".lock", ".files.lock", ".lock.queue", ".files.lock.queue", ".generation", MARK_FILE)
"""What of a thread directory is this process's or this thread id's, not the thread's data."""


@dataclass
class AssignedThread:
    """One thread now in the user's scope."""

    thread_id: str
    messages: int
    """Messages the copy holds (every message of the source)."""
    checkpoints: int
    source_kept: bool


def assign_threads(
    memory: TopicMemory, user_id: str, thread_ids: Sequence[str], *, keep_source: bool = False
) -> list[AssignedThread]:
    """Move (or copy, ``keep_source``) plain threads into user ``user_id``'s scope.

    Raises:
        InputError: A bad user id, or a thread that cannot be assigned (one line naming it);
            nothing was written.
        ThreadBusyError: A writer kept one of the threads past the lock timeout.
    """
    user_id = check_user_id(user_id)
    if not thread_ids:
        raise InputError("migrate --user needs at least one --thread to assign")
    checked = [_assignable(memory, user_id, check_thread_id(t)) for t in dict.fromkeys(thread_ids)]
    return [_assign(memory, user_id, t, keep_source=keep_source) for t in checked]


def _assignable(memory: TopicMemory, user_id: str, thread_id: str) -> str:
    if scoped_parts(thread_id) is not None:
        raise InputError(f"thread {thread_id!r} is already a user's thread")
    if not memory.exists(thread_id):
        raise InputError(f"no thread {thread_id!r} in {memory.location}")
    if any(t["thread_id"] == thread_id for t in memory.scope_registry.threads(user_id)):
        raise InputError(f"user {user_id!r} already has a thread {thread_id!r}")
    root = thread_directory(Path(memory.settings.data_dir), thread_id)
    if root.is_dir() and any(p.name.startswith(PENDING_PREFIX) for p in root.iterdir()):
        raise InputError(
            f"thread {thread_id!r} has a chat line pending: run chat on it first, so that it "
            "is answered before the thread moves"
        )
    return thread_id


def _assign(
    memory: TopicMemory, user_id: str, thread_id: str, *, keep_source: bool
) -> AssignedThread:
    target = scoped_thread_id(user_id, thread_id)
    memory.wait_idle(thread_id)
    with memory.writing(thread_id):
        memory.resume(thread_id)  # a turn cut short finishes first: its message moves too
        if memory.exists(target):  # an earlier run's partial copy: no registry names it
            delete_thread(memory, target)
        with memory.writing(target), memory.reading(thread_id):
            copied = _copy_checkpoints(memory, thread_id, target)
            _copy_files(memory, thread_id, target)
        memory.services.forget_stores(target)
        held = _verify(memory, thread_id, target)
        memory.scope_registry.add(user_id, thread_id, "stored")  # its checkpoints copied there
    if not keep_source:
        delete_thread(memory, thread_id)
    return AssignedThread(thread_id, held, copied, keep_source)


def _copy_checkpoints(memory: TopicMemory, source: str, target: str) -> int:
    saver = memory.checkpointer
    wanted = thread_checkpoints(saver, source)
    plan = CheckpointPlan(thread_id=target, total=len(wanted), to_copy=wanted, unfinished_writes=[])
    return copy_checkpoints(saver, saver, plan)


def _copy_files(memory: TopicMemory, source: str, target: str) -> None:
    data_dir = Path(memory.settings.data_dir)
    workflow = workflow_file(data_dir, source)
    if workflow.is_file():
        shutil.copy2(workflow, workflow_file(data_dir, target))
    store = memory.shared_store
    if store is not None:
        _copy_items(store, thread_namespace(source), thread_namespace(target))
        return  # the retrieval cache under data_dir is rebuilt from the store's topics
    root = thread_directory(data_dir, source)
    if not root.is_dir():  # no split yet: the thread lives in its checkpoints only
        return
    copy = thread_directory(data_dir, target)
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(*LEFT_BEHIND), dirs_exist_ok=True)
    fsync_directory(copy.parent)
    CheckpointedMarks().mark(copy, target)


def _copy_items(store: BaseStore, source: tuple[str, ...], target: tuple[str, ...]) -> None:
    offset = 0
    while True:
        items = store.search(source, limit=PAGE, offset=offset)
        for item in items:
            namespace = (*target, *item.namespace[len(source) :])
            store.put(namespace, item.key, item.value, index=False)
        if len(items) < PAGE:
            return
        offset += PAGE


def _verify(memory: TopicMemory, source: str, target: str) -> int:
    """The copy's message count, once it holds every message of the source, unchanged.

    Raises:
        InputError: The copy differs (it is left for the next run to delete and redo; the
            source is whole).
    """
    wanted = {m["id"]: m["content"] for m in memory.transcript(source)}
    held = {m["id"]: m["content"] for m in memory.transcript(target)}
    report = memory.check(target)
    if held != wanted or not report.ok:
        problem = "; ".join(report.findings[:2]) or "its messages differ from the source's"
        raise InputError(
            f"thread {source!r}: the copy in the user's scope failed its check: {problem}"
        )
    return len(held)
