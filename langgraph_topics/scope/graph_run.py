"""A user-scope run of the graph itself: the user's other threads read before it starts.

``TopicMemory.user`` and ``TopicMemoryMiddleware`` read a user's other threads before a turn
and hand what they found to the graph in ``TopicContext.scope_quotes``. A run that reaches the
compiled graph directly (LangGraph Server, Studio, ``langgraph dev``, ``graph.invoke`` with a
checkpointer) has nobody to do that: ``TopicGraph.stream`` calls ``scope_context`` where the
run's context is made, before LangGraph saves the input, and the run goes on with the quotes
in its context, exactly as a ``TopicMemory.user`` turn does (``recall.py``: the same search,
the same cap, the same warning for a thread that cannot be read).

What a run can see of another thread of its user (``GraphThreads``):

- its stores, where the run's services keep every thread's: topic files and retrieval index
  under the data directory (embedded), or the store's topic items (a platform store, the
  ``postgres`` profile) with the retrieval index rebuilt from them;
- its newest checkpoint (the unsplit messages, and which topics its branch holds): under the
  user's stored id (a thread ``TopicMemory.user`` or a run on that id made) in the run's
  checkpointer or the data directory's SQLite database; or under the thread's own name in the
  run's checkpointer when that checkpoint records itself as the user's thread
  (``run_scope.check_memory_thread``: a run on the application's thread id). A thread whose
  checkpoints live where the run cannot look (another checkpointer) is read from its stores:
  what it split is quoted, its unsplit tail is not.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, convert_to_messages
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from langgraph_topics.errors import first_line
from langgraph_topics.scope.checkpoint_home import home_of, refuse_other_home
from langgraph_topics.scope.recall import recall_from_threads
from langgraph_topics.scope.registry import FileScopeRegistry, ScopeRegistry, StoreScopeRegistry
from langgraph_topics.scope.run_scope import (
    MEMORY_THREAD_KEY,
    check_memory_thread,
    given_user,
    scope_thread,
    user_id_of,
)
from langgraph_topics.scope.threads import belongs_to, local_thread_id
from langgraph_topics.services import TopicContext, TopicServices, services_of, thread_directory
from langgraph_topics.settings import Settings
from langgraph_topics.stores.base_store_topics import stored_head
from langgraph_topics.stores.checkpointer import open_sqlite_checkpointer
from langgraph_topics.stores.data_layout import checkpoint_database
from langgraph_topics.thread_ids import check_thread_id, scoped_parts

log = logging.getLogger(__name__)

READ_MODES = ("chat", "assemble", "context")
"""Turns that assemble a window, and so quote the other threads (an import, a split: none)."""


@dataclass
class GraphThreads:
    """A user's threads as a graph run reaches them (``recall.UserThreads``).

    Args:
        services: The run's services (their stores hold the threads).
        checkpointer: The run's checkpointer (None: the graph has none).
    """

    services: TopicServices
    checkpointer: BaseCheckpointSaver[Any] | None
    _savers: list[BaseCheckpointSaver[Any]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self._savers = [s for s in (self.checkpointer, _data_dir_saver(self.services)) if s]

    @property
    def settings(self) -> Settings:
        """The services' settings."""
        return self.services.settings

    @property
    def scope_registry(self) -> ScopeRegistry:
        """The registry beside the services' topics (``registry_of``)."""
        return registry_of(self.services)

    def exists(self, thread_id: str) -> bool:
        """Whether the thread has a checkpoint the run can read, or stored topics."""
        if self.state(thread_id):
            return True
        store = self.services.shared_store
        if store is not None:
            return stored_head(store, thread_id) > 0
        return thread_directory(Path(self.settings.data_dir), thread_id).is_dir()

    def reading(self, thread_id: str, timeout: float | None = None) -> AbstractContextManager[None]:
        """The thread's files lock (topic files); a shared store needs none to be read.

        ``timeout``: as ``TopicMemory.reading``'s.
        """
        if self.services.shared_store is not None:
            return nullcontext()
        return _files_lock(self.services, thread_id, timeout)

    def state(self, thread_id: str) -> dict[str, Any]:
        """The newest checkpoint's values (``{}``: none the run can read)."""
        for saver in list(self._savers):
            values = self._values(saver, thread_id)
            if values:
                return values
        # A run on the application's thread id keeps its checkpoints under the thread's name.
        if self.checkpointer is not None and self.checkpointer in self._savers:
            values = self._values(self.checkpointer, local_thread_id(thread_id))
            if values.get(MEMORY_THREAD_KEY) == thread_id:
                return values
        return {}

    def checkpointed(self, thread_id: str) -> bool:
        """Whether a checkpointer the run reads holds a checkpoint under ``thread_id`` itself."""
        return any(self._values(saver, thread_id) for saver in list(self._savers))

    def own_state(self, configurable: Mapping[str, Any]) -> dict[str, Any]:
        """The values of the checkpoint the run starts from.

        ``{}`` for a new thread, or one this checkpointer cannot show here (the graph's first
        node checks that one instead).
        """
        if self.checkpointer is None:
            return {}
        try:
            found = self.checkpointer.get_tuple(
                {"configurable": {"checkpoint_ns": "", **configurable}}
            )
        except Exception as error:
            log.debug("user scope: the run's checkpoint not read ahead: %s", first_line(error))
            return {}
        return dict(found.checkpoint.get("channel_values") or {}) if found is not None else {}

    def _values(self, saver: BaseCheckpointSaver[Any], thread_id: str) -> dict[str, Any]:
        """The channel values of the thread's newest checkpoint in ``saver`` (``{}``: none).

        A checkpointer that cannot be read here (one a server only reads asynchronously) is
        left out of the rest of the turn with one warning: the threads' stores still are read.
        """
        try:
            found = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
        except Exception as error:
            log.warning(
                "user scope: %s not read, the other threads' unsplit messages are left out: %s",
                type(saver).__name__,
                first_line(error),
            )
            self._savers.remove(saver)
            return {}
        return dict(found.checkpoint.get("channel_values") or {}) if found is not None else {}


def scope_context(graph: Any, input: Any, config: Mapping[str, Any] | None, context: Any) -> Any:
    """The context a run of ``graph`` starts with: in user scope, with the other threads' quotes.

    Unchanged for a run naming no user, a ``thread``-scope run, and a context that already
    carries ``scope_quotes`` (``TopicMemory``'s turns, the middleware's). Otherwise the context
    names the user (``user_id``: the nodes keep the run's topics as the user's thread,
    ``run_scope.memory_thread_of``); a turn with a new user message records the thread in the
    user's registry as the most recently active (``ScopeRegistry.enter``; a ``context`` query
    records nothing, an import only registers it) and gets the quotes of the
    ``scope_threads`` most recently active others. Every such run is checked against where
    the thread keeps its checkpoints (``checkpoint_home``: the application's thread id, or the
    stored id for a run given it), the first one recording it in the same registry read.

    Raises:
        InputError: An invalid user id, thread id or per-run setting, or a thread whose
            checkpoints are kept under the other thread id (one line; nothing read or written).
    """
    user_id = given_user(config, context)
    if user_id is None or _carries_quotes(context):
        return context
    configurable = (config or {}).get("configurable") or {}
    services = services_of(Runtime(context=context, store=_store_of(graph, configurable)))
    thread_id = check_thread_id(str(configurable.get("thread_id") or "default"))
    stored, user = scope_thread(thread_id, user_id, services.settings.memory_scope)
    threads = GraphThreads(services, _checkpointer_of(graph, configurable))
    own: dict[str, Any] = {}
    if scoped_parts(thread_id) is None and threads.checkpointer is not None:
        # Refused here rather than by the first node: before LangGraph saves the input.
        own = threads.own_state(configurable)
        check_memory_thread(own, thread_id, stored)
    if user is None:
        return context
    # The nodes work on the user's thread: they read the user from the context only.
    context = _with(context, user_id=user)
    local = local_thread_id(stored)
    # Where this run keeps the thread's checkpoints, checked against the registry's record
    # (``checkpoint_home``) in the same read that registers the thread.
    home = home_of(thread_id)
    held = _held(threads, own, thread_id, stored)
    registry = threads.scope_registry
    mode = (input.get("mode") if isinstance(input, Mapping) else None) or "chat"
    text = _last_user_text(input)
    if mode not in READ_MODES or not text:
        if mode == "import":
            registry.add(user, local, home, held)
        else:
            registry.claim(user, local, home, held)
        return context
    if mode == "context":  # it writes nothing: checked, nothing recorded
        refuse_other_home(user, local, home, registry.home(user, local))
        recent = None
    else:
        recent = registry.enter(user, local, home, held)
    # Handed in even when empty: the turn's model may search the other threads again.
    return _with(context, scope_quotes=recall_from_threads(threads, user, local, text, recent))


def _held(
    threads: GraphThreads, own: Mapping[str, Any], run_thread: str, stored: str
) -> Callable[[], bool]:
    """``held`` of a run (``checkpoint_home.must_record``): asked only of a thread with no record.

    A run on the stored id holds the thread when it has a checkpoint there; a run on the
    application's thread id when its checkpoint records the user's thread (``memory_thread``)
    and no checkpoint the run can see holds the stored id.
    """
    if run_thread == stored:
        return lambda: bool(threads.state(stored))
    return lambda: own.get(MEMORY_THREAD_KEY) == stored and not threads.checkpointed(stored)


def claim_first_run(
    runtime: Runtime[Any] | None, state: Mapping[str, Any], run_thread: str, memory_thread: str
) -> None:
    """Check where the first run of a user's thread keeps its checkpoints (the first node's).

    ``scope_context`` and ``TopicMemory.user`` check a run before it starts; this is for a
    run naming its user that reached the graph another way (the graph inside an
    application's graph). Only a checkpoint thread's first run can begin a second way (a
    thread run both ways before homes were recorded is left as it is): a plain thread, a
    later turn and a run naming no user read nothing here.

    Raises:
        InputError: The thread's checkpoints are kept elsewhere (one line).
    """
    if scoped_parts(memory_thread) is None or state.get("total_messages"):
        return
    user_id = user_id_of(runtime)
    if user_id is None or not belongs_to(memory_thread, user_id):
        return
    registry = registry_of(services_of(runtime))
    registry.claim(user_id, local_thread_id(memory_thread), home_of(run_thread))


def _carries_quotes(context: Any) -> bool:
    if isinstance(context, Mapping):
        return context.get("scope_quotes") is not None
    return getattr(context, "scope_quotes", None) is not None


def _with(context: Any, **changes: Any) -> Any:
    """``context`` with ``changes`` (``user_id``, ``scope_quotes``), in the shape it came."""
    if isinstance(context, TopicContext):
        return replace(context, **changes)
    if isinstance(context, Mapping):
        return {**context, **changes}
    return TopicContext(**changes)


def _last_user_text(input: Any) -> str:
    """The text of the input's last user message ('' when it carries none)."""
    if not isinstance(input, Mapping):
        return ""
    given = input.get("messages")
    if not given:
        return ""
    try:
        messages: Sequence[BaseMessage] = convert_to_messages(
            given if isinstance(given, list) else [given]
        )
    except (ValueError, TypeError, NotImplementedError):  # the graph refuses it with one line
        return ""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message.content if isinstance(message.content, str) else ""
    return ""


# Where LangGraph puts a run's store and checkpointer when a caller (a server) hands them in
# the config rather than on the compiled graph (``langgraph._internal._constants``).
CONFIG_STORE = "__pregel_store"
CONFIG_CHECKPOINTER = "__pregel_checkpointer"


def _store_of(graph: Any, configurable: Mapping[str, Any]) -> BaseStore | None:
    store = getattr(graph, "store", None) or configurable.get(CONFIG_STORE)
    return store if isinstance(store, BaseStore) else None


def _checkpointer_of(
    graph: Any, configurable: Mapping[str, Any]
) -> BaseCheckpointSaver[Any] | None:
    saver = getattr(graph, "checkpointer", None)
    if not isinstance(saver, BaseCheckpointSaver):
        saver = configurable.get(CONFIG_CHECKPOINTER)
    return saver if isinstance(saver, BaseCheckpointSaver) else None


_cache_lock = threading.Lock()
_registries: dict[tuple[str, int], tuple[Any, ScopeRegistry]] = {}
_savers: dict[Path, BaseCheckpointSaver[Any] | None] = {}
_locks: dict[int, tuple[TopicServices, Any]] = {}


def registry_of(services: TopicServices) -> ScopeRegistry:
    """The registry beside the services' topics: the shared store's, else the data directory's."""
    store = services.shared_store
    key = ("store", id(store)) if store is not None else (str(services.settings.data_dir), 0)
    with _cache_lock:
        found = _registries.get(key)
        if found is None:
            registry: ScopeRegistry = (
                StoreScopeRegistry(store)
                if store is not None
                else FileScopeRegistry(Path(services.settings.data_dir))
            )
            found = (store, registry)  # the store kept alive: its id is not reused
            _registries[key] = found
        return found[1]


def _data_dir_saver(services: TopicServices) -> BaseCheckpointSaver[Any] | None:
    """The data directory's checkpoint database (``TopicMemory``'s), when there is one.

    Threads a ``TopicMemory`` ran keep their checkpoints there; opened once per process,
    only to read. A shared store's profile keeps none there.
    """
    if services.shared_store is not None:
        return None
    path = checkpoint_database(Path(services.settings.data_dir))
    with _cache_lock:
        if path not in _savers:
            if not path.is_file():
                return None
            try:
                _savers[path] = open_sqlite_checkpointer(path)
            except Exception as error:  # its threads are read from their stores alone
                log.warning("user scope: %s not read: %s", path, first_line(error))
                _savers[path] = None
        return _savers[path]


@contextmanager
def _files_lock(
    services: TopicServices, thread_id: str, timeout: float | None = None
) -> Iterator[None]:
    """The thread's files lock, through one ``ThreadLocks`` per services.

    One per services, because it re-opens the stores another process wrote since this one
    last read them.
    """
    from langgraph_topics.thread_locks import ThreadLocks

    with _cache_lock:
        found = _locks.get(id(services))
        if found is None:
            found = (services, ThreadLocks(services, services.settings.lock_timeout_seconds))
            _locks[id(services)] = found
    with found[1].files(thread_id, timeout):
        yield
