"""Everything a node needs besides the state: settings, role back ends, stores, counters.

Nodes reach these through ``Runtime[TopicContext]``. When no context is passed (a subgraph in
someone else's graph, or the Studio server), a process-wide default built from the environment
serves, so the graph runs anywhere with no extra wiring.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from langgraph_topics.errors import InputError
from langgraph_topics.history.refined_turns import HISTORY_DIR, RefinedTurnLog
from langgraph_topics.retrieval.evidence import EvidenceScorer
from langgraph_topics.retrieval.message_index import (
    MessageIndex,
    OverlayMessageIndex,
    open_message_index,
)
from langgraph_topics.roles.protocols import Roles
from langgraph_topics.runtime_protocols import is_branched
from langgraph_topics.settings import (
    MODEL_RUN_SETTINGS,
    RUN_SETTING_NAMES,
    RUN_SETTINGS_KEY,
    RunSettings,
    Settings,
    check_run_settings,
    run_settings_key,
    with_run_settings,
)
from langgraph_topics.stores.embeddings import CachingEmbedder, UseEmbedder
from langgraph_topics.stores.namespace_store import (
    FileNamespaceStore,
    InMemoryNamespaceStore,
    NamespaceStore,
)
from langgraph_topics.stores.overlay import OverlayTopicIndex, OverlayTopicStore
from langgraph_topics.stores.protocols import (
    Embedder,
    TopicIndex,
    TopicStore,
)
from langgraph_topics.stores.seq_ranges import SeqRanges, normalize
from langgraph_topics.thread_ids import check_thread_id
from langgraph_topics.thread_ids import thread_directory_name as thread_directory_name  # re-export
from langgraph_topics.tokens import TokenCounter, default_token_counter
from langgraph_topics.tuning.role_stats import RoleStatsCollector
from langgraph_topics.workflow.sources import WorkflowSources


def utc_now() -> datetime:
    """The current time, timezone-aware."""
    return datetime.now(UTC)


def branch_ranges(state: Mapping[str, Any]) -> SeqRanges | None:
    """The topic-store ranges a checkpoint's values recorded (``None`` before any split)."""
    recorded = state.get("store_ranges")
    return None if recorded is None else normalize(recorded)


@dataclass
class ThreadStores:
    """The stores of one conversation thread."""

    topic_store: TopicStore
    topic_index: TopicIndex
    message_index: MessageIndex
    """Embeddings and lexical statistics of the split messages (seed 004 §3)."""
    namespace_store: NamespaceStore = field(default_factory=InMemoryNamespaceStore)
    """Full texts of large tool results, by reference (seed 001 T2)."""
    refined_turns: RefinedTurnLog | None = None
    """One neutral record per split exchange (``history``); None: none kept (a dry run)."""


def thread_directory(data_dir: Path, thread_id: str) -> Path:
    """Where the embedded stores keep a thread's topic files and retrieval index."""
    return Path(data_dir) / "threads" / thread_directory_name(thread_id)


def index_collection_name(thread_id: str) -> str:
    """The Chroma collection of a thread's topic index.

    Chroma refuses two consecutive periods in a collection name, which a thread id such as
    ``../x`` leaves in its directory name; names without them stay as they always were. A
    user's thread is ``u-<user key>.<name>`` (``scope.forget`` finds a user's by the prefix).
    """
    name = thread_directory_name(thread_id).replace("..", "__")
    if name.startswith("@"):  # a user's thread: Chroma names hold no "@"
        return "u-" + name[1:].replace("@", ".", 1).replace("..", "__")
    return "t-" + name


@dataclass
class TopicServices:
    """Settings, roles and per-thread stores of one topic memory."""

    settings: Settings
    roles: Roles
    embedder: Embedder
    token_counter: TokenCounter
    open_stores: Callable[[str], ThreadStores]
    """Opens (or creates) the stores of a thread; called once per thread and cached."""
    clock: Callable[[], datetime] = utc_now
    evidence: EvidenceScorer | None = None
    """Scores messages for a question (built from ``embedder`` when not given)."""
    role_stats: RoleStatsCollector = field(default_factory=RoleStatsCollector, repr=False)
    """Model-role call records of each thread, drained into the tuning log every turn."""
    record_tuning: bool = True
    """Whether turns append to the tuning log (off for dry runs)."""
    writes_in_memory: bool = False
    """Whether store writes stay in memory (a dry run): a context query may split then."""
    workflows: WorkflowSources = field(default_factory=WorkflowSources, repr=False, compare=False)
    """Workflow sources attached in memory per thread (a stored DAG needs none; seed 001 T4)."""
    shared_store: BaseStore | None = field(default=None, repr=False, compare=False)
    """The store that holds every thread's topics (the ``postgres`` profile's, a platform
    store); None: topic files under ``data_dir``. A user's registry lives beside them."""
    _stores: dict[str, ThreadStores] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _settings_roles: Roles | None = field(default=None, repr=False, compare=False)
    """The roles ``open`` built from the settings (a run with other settings rebuilds them)."""
    _role_cache: dict[str, Roles] = field(default_factory=dict, repr=False, compare=False)
    """Roles built for other settings, by settings; shared by every ``replace`` copy."""
    _role_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _per_run: dict[str, TopicServices] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """The services of each distinct per-run settings, derived from these (never copied)."""

    @classmethod
    def open(
        cls,
        settings: Settings | None = None,
        *,
        roles: Roles | None = None,
        embedder: Embedder | None = None,
        token_counter: TokenCounter | None = None,
        clock: Callable[[], datetime] = utc_now,
        shared_store: BaseStore | None = None,
    ) -> TopicServices:
        """The stores of ``settings.store``: embedded files, or a shared PostgreSQL database.

        ``embedded``: JSONL topic files under ``data_dir``. ``postgres``: topics in the
        database's store (``BaseStoreTopicStore``), every worker reading the same; the
        retrieval index under ``data_dir`` is a worker-local cache that embeds, when a thread
        is opened, only what the shared topics hold and it lacks. The topic index is a Chroma
        server at ``settings.chroma_url``, else a Chroma directory under ``data_dir``.

        Without ``roles``, the models of the settings serve (``build_roles``): an LLM back end
        for each role that has one, the native back end for the others.

        ``shared_store`` is the ``postgres`` profile's opened store (``PostgresStore``), whose
        owner closes it (``TopicMemory`` does); left out, the profile is opened here on
        ``settings.postgres_uri`` and kept open for the life of the process.

        Raises:
            StoreUnavailableError: The ``postgres`` profile's database cannot be reached.
        """
        from langgraph_topics.roles.factory import build_roles
        from langgraph_topics.stores.scratch_files import remove_abandoned_scratch
        from langgraph_topics.stores.topic_index import open_topic_index
        from langgraph_topics.stores.topic_index_catch_up import mend_topic_index
        from langgraph_topics.stores.topic_store import JsonlTopicStore

        settings = settings or Settings()
        embedder = CachingEmbedder(embedder or UseEmbedder())
        data_dir = Path(settings.data_dir)
        if settings.store == "postgres" and shared_store is None:
            from langgraph_topics.stores.postgres_profile import open_postgres_profile

            shared_store = open_postgres_profile(cast(str, settings.postgres_uri)).store

        def open_stores(thread_id: str) -> ThreadStores:
            if settings.store == "postgres":
                from langgraph_topics.stores.platform_store import open_platform_thread_stores

                return open_platform_thread_stores(
                    settings, embedder, cast("BaseStore", shared_store), thread_id
                )
            root = thread_directory(data_dir, thread_id)
            remove_abandoned_scratch(root)
            topic_store = JsonlTopicStore(root)
            topic_index = open_topic_index(
                data_dir, settings.chroma_url, embedder, index_collection_name(thread_id)
            )
            mend_topic_index(topic_index, topic_store, thread_id)
            return ThreadStores(
                topic_store=topic_store,
                topic_index=topic_index,
                message_index=open_message_index(root / "retrieval", embedder, topic_store),
                namespace_store=FileNamespaceStore(
                    root / "namespace", max_bytes=settings.namespace_cache_bytes
                ),
                refined_turns=RefinedTurnLog(root / HISTORY_DIR),
            )

        built = None if roles is not None else build_roles(settings, embedder=embedder)
        return cls(
            settings=settings,
            roles=roles or cast(Roles, built),
            embedder=embedder,
            token_counter=token_counter or default_token_counter(settings.tokenizer),
            open_stores=open_stores,
            clock=clock,
            shared_store=shared_store if settings.store == "postgres" else None,
            _settings_roles=built,
        )

    def __post_init__(self) -> None:
        if self.evidence is None:
            self.evidence = EvidenceScorer(self.embedder)

    @property
    def scorer(self) -> EvidenceScorer:
        """The evidence scorer (always set after construction)."""
        assert self.evidence is not None
        return self.evidence

    def stores(self, thread_id: str, ranges: SeqRanges | None = None) -> ThreadStores:
        """The stores of ``thread_id``, opened on first use.

        Args:
            thread_id: The conversation thread.
            ranges: The topic-store records of the branch being read (``store_ranges`` of
                its checkpoint); ``None`` takes the stores as they are.
        """
        with self._lock:
            if thread_id not in self._stores:
                self._stores[thread_id] = self.open_stores(thread_id)
            current = self._stores[thread_id]
            store = current.topic_store
            if ranges is not None and is_branched(store) and store.visible_ranges() != ranges:
                # Another branch (a fork, a time travel) or a write its checkpoint never
                # recorded (a crash): read the files again as this branch sees them.
                current = replace(current, topic_store=store.on_branch(ranges))
                self._stores[thread_id] = current
            return current

    def branch_stores(self, thread_id: str, state: Mapping[str, Any]) -> ThreadStores:
        """The stores as the branch of ``state`` (a checkpoint's values) sees them."""
        return self.stores(thread_id, branch_ranges(state))

    def forget_stores(self, thread_id: str) -> None:
        """Drop the cached stores of ``thread_id``: the next use opens them from disk again.

        For when another process wrote the thread: the stores answer from views loaded when
        they were opened. Callers must hold the thread's file lock (see ``thread_locks``), so
        that no writer is halfway through an append while the stores are read back.
        """
        from langgraph_topics.stores.topic_index import ChromaTopicIndex

        with self._lock:
            dropped = self._stores.pop(thread_id, None)
        if dropped is not None and isinstance(dropped.topic_index, ChromaTopicIndex):
            ChromaTopicIndex.reload_from_disk_next_time()

    def with_run_settings(self, changes: Mapping[str, Any]) -> TopicServices:
        """These services with a run's settings (``RunSettings``, see ``check_run_settings``).

        The copy shares everything but the settings and the role back ends: the per-thread
        stores (so one process never opens a thread's directory twice), the role statistics,
        the embedder. Role back ends built from the settings (``open`` without ``roles``) are
        built again for the new settings, once per distinct settings; roles given in code are
        kept, and then a run may change only ``budget_tokens`` and ``language``.

        Args:
            changes: A run's ``topic_memory`` value (checked here), or its checked changes.

        Raises:
            InputError: An invalid or unusable setting (one line naming it), e.g. a budget under
                250 tokens, an unknown provider, or a model for services whose roles were given
                in code.
        """
        checked = check_run_settings(changes)
        if not checked:
            return self
        key = run_settings_key(checked)
        with self._role_lock:
            cached = self._per_run.get(key)
        if cached is not None:
            return cached
        settings = with_run_settings(self.settings, checked)
        if settings == self.settings:
            return self
        if self._settings_roles is not None and self.roles is self._settings_roles:
            roles = self._roles_for(settings)
        else:
            changed = [
                name
                for name in MODEL_RUN_SETTINGS
                if getattr(settings, name) != getattr(self.settings, name)
            ]
            if changed:
                raise InputError(
                    f"{RUN_SETTINGS_KEY}.{changed[0]}: these services were given their role back "
                    "ends in code, so a run cannot change their models or prompts (build them "
                    "with TopicServices.open(settings) without roles)"
                )
            roles = self.roles
        derived = replace(
            self,
            settings=settings,
            roles=roles,
            _settings_roles=roles if roles is not self.roles else self._settings_roles,
        )
        with self._role_lock:
            return self._per_run.setdefault(key, derived)

    def _roles_for(self, settings: Settings) -> Roles:
        """The role back ends of ``settings``, built once per distinct settings."""
        from langgraph_topics.roles.factory import build_roles

        key = repr(settings)
        with self._role_lock:
            cached = self._role_cache.get(key)
            if cached is None:
                try:
                    cached = build_roles(settings, embedder=self.embedder)
                except InputError as error:  # name the run's setting, not the Settings field
                    text = str(error)
                    if text.startswith("Settings."):
                        text = RUN_SETTINGS_KEY + text[len("Settings") :]
                    raise InputError(text) from error
                self._role_cache[key] = cached
            return cached

    def dry_run(self) -> TopicServices:
        """A view whose store writes stay in memory (for context queries).

        Role calls of a dry run are counted apart and never reach the tuning log.
        """
        from langgraph_topics.stores.topic_index import InMemoryTopicIndex

        def open_overlay(thread_id: str) -> ThreadStores:
            base = self.stores(thread_id)
            return ThreadStores(
                topic_store=OverlayTopicStore(base.topic_store),
                topic_index=OverlayTopicIndex(base.topic_index, InMemoryTopicIndex(self.embedder)),
                message_index=OverlayMessageIndex(base.message_index),
                namespace_store=InMemoryNamespaceStore(base.namespace_store),
            )

        return replace(
            self,
            open_stores=open_overlay,
            role_stats=RoleStatsCollector(),
            record_tuning=False,
            writes_in_memory=True,
            _stores={},
            _lock=threading.Lock(),
        )


@dataclass
class TopicContext:
    """Run-scoped context of the graph (``context_schema``).

    ``services`` is typed ``Any`` so that the Studio server can still draw the schema; leave it
    ``None`` to use the process default (settings from ``LANGGRAPH_TOPICS_*`` variables).

    ``topic_memory`` holds settings of this run only (``RunSettings``: ``budget_tokens``,
    ``language``, ``strong_model``, ``cheap_model``, ``role_models``, ``prompt_dir``); the same
    object may come as ``config["configurable"]["topic_memory"]`` instead (the context's keys
    win). It is checked, and the role back ends of its models are built (once per distinct
    settings), when the context is made: a LangGraph Studio assistant or a server run with an
    invalid setting fails with one line naming it before the run starts or writes anything.

    Example:
        >>> TopicContext(topic_memory={"budget_tokens": 1200, "language": "zh"})  # doctest: +SKIP

    Raises:
        InputError: An invalid ``topic_memory`` setting, or ``services`` that are not
            ``TopicServices`` (e.g. settings sent as JSON: they belong in ``topic_memory``).
    """

    services: Any = None
    topic_memory: RunSettings | None = None
    prepared_splits: Any = None
    """Splits worked out after a reply (a ``splitting.background.BackgroundSplits``): with it,
    a chat turn leaves its split to the background and a ``split`` run writes the prepared
    one; without it (Studio, a server, a graph invoked directly) a turn splits in the graph."""
    user_id: str | None = None
    """The user of the run (``configurable.user_id`` may name it instead): a thread stored as
    another user's is refused (``scope/run_scope.py``)."""
    scope_quotes: Any = None
    """Messages of the user's other threads found for this turn (``scope.recall.ScopeQuote``;
    user scope, read before the turn took its locks); the window quotes what fits."""

    def __post_init__(self) -> None:
        if self.services is not None and not isinstance(self.services, TopicServices):
            raise InputError(
                "context services must be TopicServices built in code, got "
                f"{type(self.services).__name__}; put per-run settings under "
                f"{RUN_SETTINGS_KEY!r} ({', '.join(RUN_SETTING_NAMES)})"
            )
        changes = check_run_settings(self.topic_memory)
        if changes:  # models built now: a bad model string fails before the run starts
            (self.services or default_services()).with_run_settings(changes)


_default_services: TopicServices | None = None
_default_lock = threading.Lock()


def default_services() -> TopicServices:
    """The process-wide services built from the environment, created on first use."""
    global _default_services
    with _default_lock:
        if _default_services is None:
            _default_services = TopicServices.open()
        return _default_services


def run_settings_of(context: Any = None) -> dict[str, Any]:
    """The per-run settings of the current run, checked (``check_run_settings``).

    ``config["configurable"]["topic_memory"]`` first, then the context's ``topic_memory``
    (an attribute, or a key of a dict context), whose keys win.

    Raises:
        InputError: An invalid setting (one line naming it).
    """
    changes: dict[str, Any] = {}
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # outside a run
        configurable = {}
    changes.update(check_run_settings(configurable.get(RUN_SETTINGS_KEY)))
    if isinstance(context, Mapping):
        given = context.get(RUN_SETTINGS_KEY)
    else:
        given = getattr(context, RUN_SETTINGS_KEY, None)
    changes.update(check_run_settings(given))
    return changes


def services_of(runtime: Runtime[TopicContext] | None) -> TopicServices:
    """The services of a run: the context's, else the process default, with its run settings.

    A run with a platform store (``runtime.store``: LangGraph Server, ``langgraph dev``, a graph
    compiled with ``store=...``) and no services in its context keeps its topics in that store
    (``stores.platform_store``), unless ``LANGGRAPH_TOPICS_STORE`` names another profile.

    Per-run settings (``topic_memory`` in the context or in ``config["configurable"]``) give
    a copy that shares the stores (``TopicServices.with_run_settings``).

    Raises:
        InputError: An invalid per-run setting (one line naming it); the first node raises it
            before the turn writes anything.
    """
    context = runtime.context if runtime is not None else None
    services = getattr(context, "services", None)
    if isinstance(services, TopicServices):
        base = services
    else:
        from langgraph_topics.stores.platform_store import platform_services, platform_store_wanted

        base = default_services()
        platform = getattr(runtime, "store", None)
        if platform is not None and platform_store_wanted():
            base = platform_services(base, platform)
    changes = run_settings_of(context)
    return base.with_run_settings(changes) if changes else base


def thread_id_of(runtime: Runtime[Any] | None = None) -> str:
    """The memory thread of the current run: the thread whose stores its nodes read and write.

    The run's thread id (``run_thread_id``), except in ``user`` scope
    (``Settings.memory_scope``) for a run naming a user (``context.user_id`` or
    ``configurable.user_id``): that user's thread of that name (``scope.run_scope``), as
    ``TopicMemoryMiddleware`` does for an agent's thread.

    Raises:
        InputError: The run names an invalid thread or user id, or a thread stored as another
            user's (one line).
    """
    from langgraph_topics.scope.run_scope import memory_thread_of

    return memory_thread_of(runtime)


def run_thread_id(runtime: Runtime[Any] | None = None) -> str:
    """The thread id the current run was given (``default`` when the run has none).

    Raises:
        InputError: The run names an invalid thread (empty, NUL, over-long…): answering it
            from the ``default`` thread would hand one user another's conversation.
    """
    info = getattr(runtime, "execution_info", None) if runtime is not None else None
    if info is not None and info.thread_id is not None:
        return check_thread_id(str(info.thread_id))
    try:
        configurable = get_config().get("configurable", {})
    except RuntimeError:  # called outside a run
        return "default"
    thread_id = configurable.get("thread_id")
    return "default" if thread_id is None else check_thread_id(str(thread_id))
