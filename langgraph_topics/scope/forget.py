"""Delete everything of a user (``forget --user``), and prove nothing of it is left.

A user's threads are found three ways, so that a crash halfway through a ``forget`` (or before
a thread's first checkpoint) leaves nothing that a second ``forget`` cannot find: the user's
registry, the checkpoints (every user-scoped thread id opens with the user's key), and the
user's prefix (``thread_ids.user_prefix``) in directory names, Chroma collection names and
``BaseStore`` namespace labels. Each thread is deleted holding its writer lock (a turn under
way finishes first; a writer holding it past the timeout stops the ``forget`` with
``ThreadBusyError``); the registry goes last, so an interrupted ``forget`` is run again.
The deleted rows are scrubbed from the SQLite files' free pages and logs too (``erasure.py``),
and ``user_remnants`` looks for the user's key in those files' raw bytes.

A thread a graph run kept in user scope (LangGraph Server, Studio, ``graph.invoke``:
``scope/graph_run.py``) has its stores under the user's thread id but its checkpoints under the
application's thread id, in the application's checkpointer. Those checkpoints carry the
memory thread (``memory_thread`` in their state), which is how they are found: in the memory's
own checkpointer, and in any other the caller hands in (``checkpointers``: a server's, which
the memory cannot reach by itself).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

from langgraph_topics.scope.erasure import erasing, residue, vacuum_index
from langgraph_topics.scope.run_scope import MEMORY_THREAD_KEY
from langgraph_topics.scope.threads import local_thread_id, scoped_thread_id, user_key
from langgraph_topics.services import index_collection_name, thread_directory
from langgraph_topics.stores.base_store_topics import NAMESPACE_PREFIX, thread_namespace
from langgraph_topics.stores.durable import fsync_directory
from langgraph_topics.stores.topic_index import collection_names, drop_collection
from langgraph_topics.thread_ids import SCOPE_MARK, user_prefix
from langgraph_topics.workflow.stored import WORKFLOWS_DIR, workflow_file

if TYPE_CHECKING:
    from langgraph_topics.memory import TopicMemory

PAGE = 500


Savers = Sequence[BaseCheckpointSaver[Any]]


def forget_user(memory: TopicMemory, user_id: str, checkpointers: Savers = ()) -> list[str]:
    """Delete every thread of ``user_id`` and their registry; returns the stored ids deleted.

    Args:
        memory: The memory holding the user.
        user_id: The user.
        checkpointers: Checkpointers besides the memory's whose graph runs kept threads of
            the user (a LangGraph Server's): their checkpoints of those threads go too.

    Raises:
        InputError: An invalid user id.
        ThreadBusyError: A writer kept one of the threads past the lock timeout (the threads
            before it are gone, the rest and the registry kept: run it again).
    """
    runs = [
        (saver, run_thread, stored_id)
        for saver in _savers(memory, checkpointers)
        for run_thread, stored_id in _graph_runs(saver, user_id).items()
    ]
    stored_ids = list(dict.fromkeys([*_user_threads(memory, user_id), *(s for *_, s in runs)]))
    with erasing(memory.checkpointer):
        for stored_id in stored_ids:
            delete_thread(memory, stored_id, [(v, r) for v, r, s in runs if s == stored_id])
    _sweep(memory, user_id)
    if memory.settings.chroma_url is None:
        vacuum_index(Path(memory.settings.data_dir))
    memory.scope_registry.remove_user(user_id)
    return stored_ids


def user_remnants(memory: TopicMemory, user_id: str, checkpointers: Savers = ()) -> list[str]:
    """What of ``user_id`` is still stored, one line each (empty: nothing).

    ``checkpointers``: as ``forget_user``'s, looked in too.
    """
    prefix = user_prefix(user_key(user_id))
    found: list[str] = []
    if memory.scope_registry.holds(user_id):
        found.append(f"the registry of user {user_id!r}")
    found.extend(
        f"checkpoints of thread {local_thread_id(t)!r}" for t in _checkpointed(memory, user_id)
    )
    for saver in _savers(memory, checkpointers):
        found.extend(
            f"checkpoints of the application's thread {t!r} ({type(saver).__name__})"
            for t in _graph_runs(saver, user_id)
        )
    data_dir = Path(memory.settings.data_dir)
    for folder in ("threads", WORKFLOWS_DIR):
        found.extend(str(p) for p in _prefixed(data_dir / folder, prefix))
    found.extend(f"topic index collection {n}" for n in _collections(memory, user_id))
    store = _shared_store(memory)
    if store is not None:
        found.extend(f"store namespace {ns}" for ns in _namespaces(store, prefix))
    found.extend(f"{p}: deleted bytes of the user" for p in residue(data_dir, user_key(user_id)))
    return found


def _user_threads(memory: TopicMemory, user_id: str) -> list[str]:
    registered = [
        scoped_thread_id(user_id, t["thread_id"]) for t in memory.scope_registry.threads(user_id)
    ]
    return list(dict.fromkeys([*registered, *_checkpointed(memory, user_id)]))


def _checkpointed(memory: TopicMemory, user_id: str) -> list[str]:
    """The user's thread ids that have checkpoints (one pass over the checkpoint list)."""
    opening = f"{SCOPE_MARK}{user_key(user_id)}{SCOPE_MARK}"
    found: dict[str, None] = {}
    for saved in memory.checkpointer.list(None):
        thread_id = str(saved.config["configurable"].get("thread_id", ""))
        if thread_id.startswith(opening):
            found[thread_id] = None
    return list(found)


def _savers(memory: TopicMemory, checkpointers: Savers) -> list[BaseCheckpointSaver[Any]]:
    """The memory's checkpointer and the others given, each once."""
    return list({id(s): s for s in (memory.checkpointer, *checkpointers)}.values())


def _graph_runs(saver: BaseCheckpointSaver[Any], user_id: str) -> dict[str, str]:
    """The threads of ``saver`` a user-scope graph run kept for the user: run id → stored id.

    Found by the memory thread their checkpoints record (``run_scope.MEMORY_THREAD_KEY``),
    one pass over the checkpoint list; a user-scoped thread id itself is the memory's own
    (``_checkpointed``), not a graph run's.
    """
    opening = f"{SCOPE_MARK}{user_key(user_id)}{SCOPE_MARK}"
    found: dict[str, str] = {}
    for saved in saver.list(None):
        thread_id = str(saved.config["configurable"].get("thread_id", ""))
        marked = (saved.checkpoint.get("channel_values") or {}).get(MEMORY_THREAD_KEY)
        if (
            isinstance(marked, str)
            and marked.startswith(opening)
            and not thread_id.startswith(opening)
        ):
            found[thread_id] = marked
    return found


def delete_thread(
    memory: TopicMemory,
    stored_id: str,
    graph_runs: Sequence[tuple[BaseCheckpointSaver[Any], str]] = (),
) -> None:
    """Delete one thread everywhere: checkpoints, files, topic index, store items, workflow.

    Held under the thread's writer lock (a turn under way finishes first). ``graph_runs``:
    the checkpointers and application thread ids whose checkpoints hold it (``_graph_runs``).
    """
    data_dir = Path(memory.settings.data_dir)
    memory.wait_idle(stored_id)  # a split planned after the last reply lands first
    with memory.writing(stored_id):
        memory.services.forget_stores(stored_id)
        _drop_index(memory, index_collection_name(stored_id))
        memory.checkpointer.delete_thread(stored_id)
        for saver, run_thread in graph_runs:
            saver.delete_thread(run_thread)
        store = _shared_store(memory)
        if store is not None:
            _delete_namespaces(store, thread_namespace(stored_id))
        workflow_file(data_dir, stored_id).unlink(missing_ok=True)
        root = thread_directory(data_dir, stored_id)
        if root.exists():
            shutil.rmtree(root)
            fsync_directory(root.parent)


def _sweep(memory: TopicMemory, user_id: str) -> None:
    """Whatever of the user no thread id led to: a crash's leftovers, found by the prefix."""
    prefix = user_prefix(user_key(user_id))
    data_dir = Path(memory.settings.data_dir)
    for folder in ("threads", WORKFLOWS_DIR):
        for path in _prefixed(data_dir / folder, prefix):
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
    for name in _collections(memory, user_id):
        _drop_index(memory, name)
    store = _shared_store(memory)
    if store is not None:
        for namespace in _namespaces(store, prefix):
            _delete_namespaces(store, namespace)


def _prefixed(folder: Path, prefix: str) -> Iterator[Path]:
    if folder.is_dir():
        yield from sorted(p for p in folder.iterdir() if p.name.startswith(prefix))


def _drop_index(memory: TopicMemory, name: str) -> None:
    drop_collection(Path(memory.settings.data_dir), memory.settings.chroma_url, name)


def _collections(memory: TopicMemory, user_id: str) -> list[str]:
    """The user's topic index collections (``u-<user key>.<thread>``)."""
    opening = f"u-{user_key(user_id)}."
    names = collection_names(Path(memory.settings.data_dir), memory.settings.chroma_url)
    return [n for n in names if n.startswith(opening)]


def _shared_store(memory: TopicMemory) -> BaseStore | None:
    return memory.shared_store


def _namespaces(store: BaseStore, prefix: str) -> list[tuple[str, ...]]:
    """The thread namespaces (``(langgraph_topics, label)``) whose label opens with ``prefix``."""
    found: list[tuple[str, ...]] = []
    offset = 0
    while True:
        page = store.list_namespaces(
            prefix=(NAMESPACE_PREFIX,), max_depth=2, limit=PAGE, offset=offset
        )
        found.extend(ns[:2] for ns in page if len(ns) > 1 and ns[1].startswith(prefix))
        if len(page) < PAGE:
            return sorted(set(found))
        offset += PAGE


def _delete_namespaces(store: BaseStore, namespace: tuple[str, ...]) -> None:
    """Delete every item at ``namespace`` and below it."""
    while True:
        items = store.search(namespace, limit=PAGE)
        if not items:
            return
        for item in items:
            store.delete(item.namespace, item.key)
