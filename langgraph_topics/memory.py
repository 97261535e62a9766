"""``TopicMemory``: the application façade over the graph, the stores and the checkpointer."""

from __future__ import annotations

import logging
import shlex
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict, cast

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore
from langgraph.types import Durability, StateSnapshot

from langgraph_topics.checks import (
    CheckReport,
    check_context,
    check_links,
    check_partition,
    check_refined_turns,
    check_time_index,
    check_topic_files,
    lost_checkpoints,
    unknown_checkpoint,
)
from langgraph_topics.errors import InputError, StoreError, ThreadBusyError
from langgraph_topics.graph.builder import build_graph
from langgraph_topics.graph.review import build_review_graph
from langgraph_topics.history.phrasing import PHRASED_THEMES, phrased_themes
from langgraph_topics.history.themes import Theme
from langgraph_topics.history.timeline import (
    ThemeSummary,
    ThemeTrace,
    find_theme,
    theme_summaries,
    trace_theme,
)
from langgraph_topics.history.view import HistoryView, backfill, history_view
from langgraph_topics.importing import SourcedRecord, check_records, messages_to_add
from langgraph_topics.message_texts import check_message_text
from langgraph_topics.retrieval.history_search import SearchHit, search_history
from langgraph_topics.retrieval.related_terms import related_words
from langgraph_topics.review.clock import parse_now, review_time
from langgraph_topics.review.context import ReviewContext
from langgraph_topics.review.criteria import ArchiveGuard
from langgraph_topics.review.schedule import parse_review_at, review_due
from langgraph_topics.roles.llm.deadline import settings_deadline
from langgraph_topics.roles.protocols import Roles, ThemePhrase
from langgraph_topics.scope.recall import ScopeQuote
from langgraph_topics.scope.registry import FileScopeRegistry, ScopeRegistry, StoreScopeRegistry
from langgraph_topics.scope.run_scope import check_thread_owner
from langgraph_topics.scope.topic_reading import as_reading
from langgraph_topics.scoring import MemoryScore, Tier, check_rating, memory_score, with_signal
from langgraph_topics.services import (
    TopicContext,
    TopicServices,
    branch_ranges,
    thread_directory,
)
from langgraph_topics.settings import Settings
from langgraph_topics.splitting.background import BackgroundSplits, waits_on_models
from langgraph_topics.splitting.prepared import PreparedSplit, prepare_split
from langgraph_topics.state.messages import TIMESTAMP_KEY, text_of, to_stored
from langgraph_topics.state.records import (
    ArchivedTopic,
    AssembledContext,
    EstimateRecord,
    ReviewRecord,
    StoredMessage,
    TopicRecord,
    TopicResult,
    TopicUsage,
    TurnEvent,
)
from langgraph_topics.state.review import ReviewInput, ReviewRequest
from langgraph_topics.state.units import split_point
from langgraph_topics.state.working_set import stored_view, unsplit_messages
from langgraph_topics.stores.advisory_locks import AdvisoryThreadLocks
from langgraph_topics.stores.base_store_topics import BaseStoreTopicStore, stored_head
from langgraph_topics.stores.blas_threads import bulk_products
from langgraph_topics.stores.checkpoint_retention import Retention, prune_checkpoints
from langgraph_topics.stores.checkpoint_salvage import database_state
from langgraph_topics.stores.checkpointed_mark import CheckpointedMarks, is_marked
from langgraph_topics.stores.checkpointer import open_sqlite_checkpointer
from langgraph_topics.stores.data_layout import checkpoint_database
from langgraph_topics.stores.pending_writes import has_pending_writes
from langgraph_topics.stores.postgres_profile import (
    PostgresProfile,
    open_postgres_profile,
    redacted,
)
from langgraph_topics.stores.protocols import Embedder, ReviewableTopicStore
from langgraph_topics.stores.store_audit import audit_store_records
from langgraph_topics.stores.store_faults import checkpoint_fault
from langgraph_topics.stores.time_index_file import TIME_INDEX_FILE
from langgraph_topics.stores.topic_audit import audit_topic_files
from langgraph_topics.stores.topic_store import TOPICS_DIR, JsonlTopicStore
from langgraph_topics.stores.typed_faults import typed_file_faults
from langgraph_topics.subtopics.families import prior_families
from langgraph_topics.summaries import SummaryCard, fact_message_ids
from langgraph_topics.summaries.readable_briefs import readable_brief
from langgraph_topics.thread_ids import check_thread_id
from langgraph_topics.thread_locks import ThreadLocking, ThreadLocks
from langgraph_topics.tokens import TokenCounter
from langgraph_topics.workflow import (
    StoredWorkflow,
    WorkflowDag,
    WorkflowSource,
    WorkflowUnavailable,
    parse_dag,
    workflow_file,
)

if TYPE_CHECKING:
    from langgraph_topics.scope.user_memory import UserMemory

log = logging.getLogger(__name__)

DURABILITY: Durability = "exit"
"""One checkpoint per turn, written when the turn ends. A crash mid-turn loses only that turn's
unacknowledged input: store writes are seen only through the ranges a checkpoint records, so
the topic files need no checkpoint of their own (docs/forks-and-check.md)."""
KEEP_CHECKPOINTS = 100
"""Checkpoints kept per thread by default (Studio's history, forks, time travel)."""


class ContextReport(TypedDict):
    """What ``TopicMemory.context`` returns: the window and how it came about."""

    context: AssembledContext
    topic_results: list[TopicResult]
    """This turn's topic results, highest score first."""
    estimate: EstimateRecord
    events: list[TurnEvent]


class TopicLink(TypedDict):
    """A relation of a listed topic to another (``TopicStore.links``; ``stores/link_kinds``)."""

    topic_id: str
    """The other topic: a merged one is not listed itself (its messages are this topic's)."""
    kind: str
    """``subtopic`` (a division), ``merged`` (a review's merge), ``related`` (quoted together
    in one window), or a kind an application recorded itself."""


class TopicSummary(TypedDict):
    """A topic as ``TopicMemory.topics`` lists it."""

    id: str
    name: str
    status: str
    message_count: int
    brief: str
    """The brief as people read it: the stored one without greetings, reactions and the
    speakers' names (``summaries.readable_briefs``); the store keeps the splitter's text."""
    parent_id: str | None
    scores: list[float]
    created_at: str
    last_active_at: str
    brief_card: NotRequired[SummaryCard]
    """The brief as a card whose facts cite message ids (``expand`` brings them back)."""
    memory_score: NotRequired[float]
    """The topic's memory score now (seed 004 §2; ``langgraph_topics.scoring``); registered
    topics only."""
    tier: NotRequired[Tier]
    """Its tier: ``core``, ``essence``, ``memory-only`` or ``archive``."""
    usage: NotRequired[TopicUsage]
    """Its usage counters and user signals (pinned, rating), zeros left out."""
    children: NotRequired[list[str]]
    """A topic divided into subtopics (status ``split``): their ids. ``message_count`` counts
    a topic's own messages, so a divided one counts none and its subtopics count theirs."""
    links: NotRequired[list[TopicLink]]
    """Its relations to other topics, each once (left out when it has none)."""


def _readable_entry(entry: ArchivedTopic, people: set[str]) -> ArchivedTopic:
    """An archived topic with its brief (and its summary's text) as people read it."""
    brief = readable_brief(entry["brief"], people)
    summary = entry["summary"]
    if summary["text"] == entry["brief"]:
        summary = {**summary, "text": brief}
    return {**entry, "brief": brief, "summary": summary}


def _new_id() -> str:
    return f"msg-{uuid.uuid4().hex[:12]}"


def _import_turns(messages: Sequence[AnyMessage]) -> list[list[AnyMessage]]:
    """Group an import into turns: each user message with the replies that came before it."""
    turns: list[list[AnyMessage]] = []
    pending: list[AnyMessage] = []
    for message in messages:
        pending.append(message)
        if isinstance(message, HumanMessage):
            turns.append(pending)
            pending = []
    if pending:
        turns.append(pending)
    return turns


class TopicMemory:
    """A conversation memory that splits into topics behind the scenes and never forgets.

    ``Settings.store`` chooses where threads live: ``embedded`` (files and SQLite under the
    data directory, one machine) or ``postgres`` (checkpoints and topics in the database of
    ``Settings.postgres_uri``, shared by every worker; the memory owns the connection pool
    and ``close`` closes it).

    Example:
        >>> memory = TopicMemory(data_dir="./memory", budget_tokens=4000)  # doctest: +SKIP
        >>> memory.chat("alice", "Let's plan the trip to Kyoto")  # doctest: +SKIP
    """

    def __init__(
        self,
        data_dir: str | Path | None = None,
        budget_tokens: int | None = None,
        *,
        settings: Settings | None = None,
        roles: Roles | None = None,
        embedder: Embedder | None = None,
        token_counter: TokenCounter | None = None,
        services: TopicServices | None = None,
        keep_checkpoints: int = KEEP_CHECKPOINTS,
    ) -> None:
        self.keep_checkpoints = keep_checkpoints
        """Checkpoints each thread keeps (older ones are deleted every few turns, see
        ``checkpoint_retention``; 0 keeps all)."""
        self._retention = Retention()
        self._marks = CheckpointedMarks()
        self._profile: PostgresProfile | None = None
        """The ``postgres`` profile's pool, saver and store (None: embedded)."""
        if services is not None:  # fully wired by the caller: its settings rule
            self.services = services
            self.settings = services.settings
            self._profile = self._open_profile()
        else:
            overrides: dict[str, Any] = {}
            if data_dir is not None:
                overrides["data_dir"] = Path(data_dir)
            if budget_tokens is not None:
                overrides["budget_tokens"] = budget_tokens
            self.settings = replace(settings or Settings(), **overrides)
            self._profile = self._open_profile()
            try:
                self.services = TopicServices.open(
                    self.settings,
                    roles=roles,
                    embedder=embedder,
                    token_counter=token_counter,
                    shared_store=self._profile.store if self._profile else None,
                )
            except BaseException:
                if self._profile is not None:
                    self._profile.close()
                raise
        Path(self.settings.data_dir).mkdir(parents=True, exist_ok=True)
        self.checkpointer: BaseCheckpointSaver[Any]
        self._locks: ThreadLocking
        if self._profile is None:
            self.checkpointer = open_sqlite_checkpointer(
                checkpoint_database(self.settings.data_dir)
            )
            self._locks = ThreadLocks(self.services, self.settings.lock_timeout_seconds)
        else:
            self.checkpointer = self._profile.saver
            self._locks = AdvisoryThreadLocks(
                self.services,
                self.settings.lock_timeout_seconds,
                self._profile.uri,
                head_of=self._shared_head,
            )
        self.graph = build_graph(self.checkpointer)
        self._splits = (
            BackgroundSplits(self._plan_split, self._write_split)
            if self.settings.split_after_reply
            else None
        )
        """Splits planned after a chat turn's reply (None: a turn splits before reading)."""
        self._registry: ScopeRegistry | None = None
        self._holds = threading.local()
        """How deep the calling thread holds this memory's thread locks (``_settled``)."""
        self._replay_graph = build_graph(full_input=True)
        self.review_graph = build_review_graph(self.checkpointer)
        """The review graph on the same checkpointer (``review``, ``archive``, ``restore``)."""

    def _open_profile(self) -> PostgresProfile | None:
        """The ``postgres`` profile's database, opened (None for the embedded profile)."""
        if self.settings.store != "postgres":
            return None
        return open_postgres_profile(cast(str, self.settings.postgres_uri))

    def _shared_head(self, thread_id: str) -> int:
        """The shared topic store's high-water sequence number of a thread (0: none)."""
        assert self._profile is not None
        return stored_head(self._profile.store, thread_id)

    @property
    def shared_store(self) -> BaseStore | None:
        """The ``postgres`` profile's store every worker shares (None: embedded)."""
        return None if self._profile is None else self._profile.store

    @property
    def location(self) -> str:
        """Where the threads live, for messages: the data directory or the database."""
        if self._profile is not None:
            return redacted(self._profile.uri)
        return str(self.settings.data_dir)

    def close(self) -> None:
        """Finish the splits under way, close the checkpoint database or the pool."""
        if self._splits is not None:
            self._splits.close()
        self._locks.close()
        if self._profile is not None:
            self._profile.close()
        else:
            cast(Any, self.checkpointer).conn.close()

    def __enter__(self) -> TopicMemory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def run_config(self, thread_id: str, checkpoint_id: str | None = None) -> RunnableConfig:
        """The config the memory invokes its graph with (for ``memory.graph`` called directly).

        ``checkpoint_id``: from that earlier checkpoint instead of the newest (a fork).
        """
        # Every active topic window of a turn runs at once (LangGraph's default pool has only
        # a few workers on a small machine, and model calls mostly wait on the network).
        configurable: dict[str, Any] = {"thread_id": thread_id}
        if checkpoint_id is not None:
            configurable["checkpoint_id"] = checkpoint_id
        return {
            "configurable": configurable,
            "recursion_limit": 100,
            "max_concurrency": self.settings.max_active,
        }

    @contextmanager
    def writing(self, thread_id: str) -> Iterator[None]:
        """Hold the thread's writer lock, so that several calls write as one.

        ``chat`` and ``import_messages`` take it themselves (it is re-entrant); a second writer
        of the thread, in this process or another, waits up to
        ``Settings.lock_timeout_seconds``. Different threads never wait for each other.

        Raises:
            InputError: An invalid thread id (a ``ValueError``).
            ThreadBusyError: Another writer kept the thread longer than the timeout.
        """
        thread_id = check_thread_id(thread_id)
        with self._settled(thread_id), self._locks.writer(thread_id):
            yield

    @contextmanager
    def reading(self, thread_id: str, timeout: float | None = None) -> Iterator[None]:
        """Hold the thread's files lock, so that state and stores are read as one.

        Short: a writer appending to the topic files waits for it, never for a whole turn.
        Integrations that read the stores themselves (``services.branch_stores``) take it.
        ``timeout``: seconds to wait (None: ``Settings.lock_timeout_seconds``, after a split
        under way in this process lands; 0: now or never, waiting for nothing: a reader that
        holds another thread's locks, which must not wait on a turn holding this one's).

        Raises:
            ThreadBusyError: The lock was not free within ``timeout``.
        """
        thread_id = check_thread_id(thread_id)
        if timeout is None:
            with self._files(thread_id):
                yield
        else:
            with self._locks.files(thread_id, timeout):
                yield

    @contextmanager
    def _files(self, thread_id: str) -> Iterator[None]:
        """The thread's files lock, counted as held (``_settled``) while it is."""
        with self._settled(thread_id), self._locks.files(thread_id):
            yield

    def wait_idle(self, thread_id: str | None = None, timeout: float | None = None) -> bool:
        """Wait for the splits planned after earlier replies (of one thread, or all) to land.

        A chat turn answers before its split (``Settings.split_after_reply``); with model back
        ends the split then lands in the background, seconds later. Call this before reading
        the topics a turn's split made (a test, a script that exits). Returns whether none
        is left under way (False: ``timeout`` seconds passed).
        """
        return True if self._splits is None else self._splits.wait(thread_id, timeout)

    @contextmanager
    def _settled(self, thread_id: str) -> Iterator[None]:
        """Let a split under way on ``thread_id`` land first, when overlapping it gains nothing.

        Splits by the native back ends (or any in-process ones) run on this process's CPU: a
        turn beside them would only share the same core and interpreter, and waiting keeps
        every turn's view of the topics the same as a split made in the turn would. A split
        that waits on a model's answers runs beside the user's next turn instead (that turn
        reads the thread as it is). Only the outermost hold waits: a holder of the thread's
        locks waiting for the split's write, which needs them, would wait for ever.
        """
        self._settle(thread_id)
        depth = getattr(self._holds, "depth", 0)
        self._holds.depth = depth + 1
        try:
            yield
        finally:
            self._holds.depth = depth

    def _settle(self, thread_id: str) -> None:
        """Wait for ``thread_id``'s split under way when it runs in-process (see ``_settled``)."""
        if self._splits is not None and not waits_on_models(self.services.roles):
            if not getattr(self._holds, "depth", 0):
                self._splits.wait(thread_id)

    def _plan_split(self, thread_id: str) -> PreparedSplit | None:
        """The split a thread needs after its last reply, worked out (on a worker thread).

        The state and the stores are read under the files lock; the model calls happen
        outside it, so a turn that starts meanwhile does not wait for them.
        """
        with self.reading(thread_id):
            state = self.graph.get_state(self.run_config(thread_id)).values
            if not state.get("messages"):
                return None
            stores = self.services.branch_stores(thread_id, state)
            unsplit = unsplit_messages(stored_view(state["messages"]), stores.topic_store)
            candidates = unsplit[: split_point(unsplit, self.settings.keep_recent)]
            if len(candidates) < self.settings.min_split_messages:
                return None
            topics = dict(state.get("topics") or {})
            last_split_id = state.get("last_split_id")
            starts = list(state.get("new_topic_hints") or ())
        with settings_deadline(self.settings):  # a hung splitter does not hold the thread
            return prepare_split(
                self.services, stores, topics, candidates, last_split_id, new_topic_starts=starts
            )

    def _write_split(self, thread_id: str) -> None:
        """Write the split prepared for a thread: a ``split`` run of the graph."""
        self.run_turn(thread_id, {"messages": [], "mode": "split"})

    def run_turn(
        self,
        thread_id: str,
        payload: Mapping[str, Any],
        *,
        services: TopicServices | None = None,
        checkpoint_id: str | None = None,
        user_id: str | None = None,
        scope_quotes: Sequence[ScopeQuote] = (),
    ) -> dict[str, Any]:
        """Run one turn of the graph on ``payload``, holding the thread's locks.

        Args:
            thread_id: The conversation thread.
            payload: The graph input (``messages`` and ``mode``).
            services: Services for this turn only (e.g. another responder); the memory's own
                by default. They must share the memory's store cache (``dataclasses.replace``).
            checkpoint_id: Run from this earlier checkpoint instead of the newest: a fork, as
                Studio makes one. The new branch sees the topics as they were there.
            user_id: The user of a user-scoped thread (``TopicMemory.user``).
            scope_quotes: What the turn read of the user's other threads (user scope).

        Returns:
            The state values after the turn.

        Raises:
            InputError: An invalid thread id (a ``ValueError``).
            ThreadBusyError: Another writer kept the thread longer than the timeout.
        """
        check_thread_owner(check_thread_id(thread_id), user_id)
        with self.writing(thread_id), self._files(thread_id), typed_file_faults():
            if checkpoint_id is None:
                self._finish_interrupted(thread_id)
            else:
                self._require_checkpoint(thread_id, checkpoint_id)
            with settings_deadline(self.settings, payload.get("mode")):
                result = cast(
                    dict[str, Any],
                    self.graph.invoke(
                        cast(Any, dict(payload)),
                        self.run_config(thread_id, checkpoint_id),
                        context=self._context(services, user_id=user_id, scope_quotes=scope_quotes),
                        durability=DURABILITY,
                    ),
                )
            self._retention.after_turn(self.checkpointer, thread_id, self.keep_checkpoints)
            if self._profile is None:  # a shared database is not deleted with a data dir
                root = thread_directory(Path(self.settings.data_dir), thread_id)
                self._marks.mark(root, thread_id)
        estimate = result.get("estimate") or {}
        if (
            self._splits is not None
            and result.get("turn_mode") in ("chat", "assemble")
            and estimate.get("split")
        ):
            self._splits.submit(thread_id)  # after the reply: the user has it already
        if result.get("turn_mode") == "chat" and checkpoint_id is None:
            self._review_if_due(thread_id, result)
        return result

    def _review_if_due(self, thread_id: str, values: Mapping[str, Any]) -> None:
        """Review the thread when its daily review time passed since the last (``review_at``).

        After the reply, as the split is: the turn's answer is already made. A review that
        fails leaves the thread as the turn left it (its steps are checkpointed) and is tried
        again by the next turn: it is logged, never the turn's error.
        """
        if self.settings.review_at is None:
            return
        last = values.get("review") or {}
        topics = values.get("topics") or {}
        if not review_due(
            parse_review_at(self.settings.review_at),
            self.services.clock(),
            last.get("at"),
            (t.get("created_at", "") for t in topics.values()),
        ):
            return
        try:
            record = self._run_review(thread_id, {"review_now": None})["review"]
        except (ThreadBusyError, StoreError) as error:
            log.warning("thread %s: the scheduled review did not run (%s)", thread_id, error)
            return
        log.info(
            "thread %s: scheduled review: %d merged, %d archived",
            thread_id,
            len(record["merged"]),
            len(record["archived"]),
        )

    def _context(
        self,
        services: TopicServices | None = None,
        *,
        user_id: str | None = None,
        scope_quotes: Sequence[ScopeQuote] = (),
    ) -> TopicContext:
        """The run context of this memory's turns (its services, its background splits).

        ``user_id`` and ``scope_quotes``: a user's turn, and what it read of the user's other
        threads (``scope.user_memory``); a plain thread's turn passes neither.
        """
        if user_id is None and not scope_quotes:
            return TopicContext(services=services or self.services, prepared_splits=self._splits)
        return TopicContext(
            services=services or self.services,
            prepared_splits=self._splits,
            user_id=user_id,
            scope_quotes=as_reading(scope_quotes),
        )

    @property
    def scope_registry(self) -> ScopeRegistry:
        """Which threads each user has (``scope.registry``): a file per user, or the database's."""
        if self._registry is None:
            if self._profile is not None:
                self._registry = StoreScopeRegistry(self._profile.store)
            else:
                self._registry = FileScopeRegistry(Path(self.settings.data_dir))
        return self._registry

    def user(self, user_id: str, scope: str | None = None) -> UserMemory:
        """The memory of one user: their threads, read as one scope (issue 40).

        Args:
            user_id: The user (checked like a thread id: one clear line when it cannot be one).
            scope: ``user`` (a turn also reads the user's other threads) or ``thread`` (its own
                only); ``Settings.memory_scope`` by default.

        Raises:
            InputError: An invalid user id or scope.
        """
        from langgraph_topics.scope.user_memory import UserMemory

        return UserMemory(self, user_id, scope or self.settings.memory_scope)

    def resume(self, thread_id: str) -> dict[str, Any] | None:
        """Finish a turn that a crash (or a failing step) cut short.

        A turn's input is saved before its steps run; LangGraph drops such unfinished work
        when the next input arrives, which would lose the message it carried. Every writer
        (``run_turn``, ``chat``, ``import_messages``) therefore finishes it first; call this to
        do it on its own (e.g. to show the answer a killed ``chat`` never printed).

        Returns:
            The state after the finished turn, or None when no turn was cut short.
        """
        thread_id = check_thread_id(thread_id)
        with self.writing(thread_id), self._files(thread_id):
            return self._finish_interrupted(thread_id)

    def interrupted(self, thread_id: str) -> bool:
        """Whether the newest checkpoint holds writes of a turn that did not run to its end.

        Those are what the next input would drop: a saved input (its message) or the steps of
        a turn that failed. A checkpoint taken between two steps (per-step durability) holds
        its messages in its values already, so nothing of it can be lost; it is not looked
        for, which keeps this to two index rows of the checkpoint database on every turn.
        """
        return has_pending_writes(self.checkpointer, check_thread_id(thread_id))

    def _finish_interrupted(self, thread_id: str) -> dict[str, Any] | None:
        if not self.interrupted(thread_id):
            return None
        config = self.run_config(thread_id)
        if self.review_graph.get_state(config).next:
            # A review whose step failed: its remaining steps are the review graph's (the
            # topic graph would find nothing to run and leave them pending forever).
            log.info("thread %s: finishing a review that was cut short", thread_id)
            return cast(
                dict[str, Any],
                self.review_graph.invoke(
                    None,
                    config,
                    context=ReviewContext(services=self.services),
                    durability=DURABILITY,
                ),
            )
        log.info("thread %s: finishing a turn that was cut short", thread_id)
        with settings_deadline(self.settings):
            return cast(
                dict[str, Any],
                self.graph.invoke(
                    None,
                    self.run_config(thread_id),
                    context=self._context(),
                    durability=DURABILITY,
                ),
            )

    def chat(
        self,
        thread_id: str,
        text: str,
        *,
        user_id: str | None = None,
        scope_quotes: Sequence[ScopeQuote] = (),
    ) -> str:
        """Send a user message and return the assistant's answer.

        ``user_id`` and ``scope_quotes`` are ``TopicMemory.user``'s (a user's thread).

        Raises:
            InputError: An invalid thread id or a text UTF-8 cannot store (a lone surrogate),
                before anything is written (a ``ValueError``).
            ThreadBusyError: Another writer kept the thread longer than the timeout.
        """
        text = check_message_text(text)
        result = self.run_turn(
            thread_id,
            {"messages": [HumanMessage(text, id=_new_id())], "mode": "chat"},
            user_id=user_id,
            scope_quotes=scope_quotes,
        )
        reply = result["messages"][-1]
        return text_of(reply) if isinstance(reply, AIMessage) else ""

    def import_messages(
        self,
        thread_id: str,
        messages: Iterable[BaseMessage | Mapping[str, Any] | SourcedRecord],
        *,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Record a past conversation without generating replies; returns how many were added.

        The whole input is checked first (see ``langgraph_topics.importing``): a bad record,
        an id used twice, or an id the thread already holds with other content raises
        ``InputError`` naming the record, and nothing is written. Messages the thread already
        holds (same id, same content) are skipped, so importing the same input again adds
        nothing; records without an id get one derived from their content.

        Each user message arrives the way it would live (preceded by the replies to the one
        before), so the estimate and the split run exactly as in a chat. The thread's writer
        lock is held for the whole import.

        Args:
            thread_id: The conversation thread.
            messages: LangChain messages or records ``{id?, role, content, name?, timestamp?}``
                (wrapped in ``SourcedRecord`` to have errors name a file line).
            progress: Called after each turn with how many input records are done.

        Raises:
            InputError: A bad record, thread id or id conflict (a ``ValueError``).
            ThreadBusyError: Another writer kept the thread longer than the timeout.
        """
        thread_id = check_thread_id(thread_id)
        checked = check_records(messages)
        with self.writing(thread_id):
            with self._files(thread_id):
                self._finish_interrupted(thread_id)  # its messages count as held below
                held = self._held_messages(thread_id, [entry.id for entry in checked])
            fresh = messages_to_add(checked, held, thread_id)
            done = len(checked) - len(fresh)  # skipped: already in the thread
            with bulk_products():  # big encodes on every core: throughput, not a turn
                for batch in _import_turns(fresh):
                    self.run_turn(thread_id, {"messages": batch, "mode": "import"})
                    done += len(batch)
                    if progress:
                        progress(done)
            # 3–20 active after an import too (seed 000 §4.7): each split activated what it
            # touched, and the first turn after the import must read no more than any other.
            from langgraph_topics.activation.active_cap import cap_after_import

            with self._files(thread_id):
                cap_after_import(self, thread_id)
        return len(fresh)

    def _held_messages(self, thread_id: str, ids: Sequence[str]) -> dict[str, StoredMessage]:
        """The thread's messages among ``ids``, from the working set or from the topics."""
        wanted = set(ids)
        working = {
            message.id: to_stored(message)
            for message in self.state(thread_id).get("messages", [])
            if message.id in wanted
        }
        store = self.services.branch_stores(thread_id, self.state(thread_id)).topic_store
        in_topics = store.get_messages([i for i in ids if i not in working])
        return {**in_topics, **working}

    def context(
        self,
        thread_id: str,
        text: str,
        *,
        user_id: str | None = None,
        scope_quotes: Sequence[ScopeQuote] = (),
    ) -> ContextReport:
        """Assemble the main window for ``text`` as a turn would, changing nothing stored.

        ``user_id`` and ``scope_quotes`` are ``TopicMemory.user``'s (a user's thread).

        Everything before the response runs (estimate, split, topic windows, activation); the
        split's writes go to an in-memory overlay and the state is not checkpointed. The state
        is read and the stores are (re)opened under the thread's file lock; the rest runs
        without it, so a context query never holds up a writer.

        Raises:
            InputError: An invalid thread id, or a text UTF-8 cannot store (a lone surrogate).
        """
        thread_id = check_thread_id(thread_id)
        text = check_message_text(text)
        check_thread_owner(thread_id, user_id)
        # A split being written would land under the replay (its overlay reads the stores as
        # they are): wait for the thread's split under way, then read it as it stands.
        self.wait_idle(thread_id)
        with self._files(thread_id):
            values = self.state(thread_id)
            self.services.branch_stores(thread_id, values)  # opened (or re-opened) under the lock
        question = HumanMessage(
            text, id=_new_id(), additional_kwargs={TIMESTAMP_KEY: self.services.clock().isoformat()}
        )
        values["messages"] = [*values.get("messages", []), question]
        values["mode"] = "context"
        for per_turn in ("topic_results", "events"):
            values.pop(per_turn, None)
        with settings_deadline(self.settings, "context"):
            result = cast(
                dict[str, Any],
                self._replay_graph.invoke(
                    cast(Any, values),
                    self.run_config(thread_id),
                    context=TopicContext(
                        services=self.services.dry_run(),
                        user_id=user_id,
                        # A user's query was read for by its caller (even when it found
                        # nothing): the graph reads no other thread (``scope.graph_run``).
                        scope_quotes=as_reading(scope_quotes) if user_id is not None else None,
                    ),
                ),
            )
        results = sorted(
            result.get("topic_results", {}).values(), key=lambda r: -r["relevance_score"]
        )
        return {
            "context": result["context"],
            "topic_results": results,
            "estimate": result["estimate"],
            "events": result.get("events", []),
        }

    def state(self, thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
        """The thread's checkpointed state values (of its newest checkpoint by default).

        Raises:
            UnknownCheckpointError: ``checkpoint_id`` is not one of the thread's (an
                ``InputError``).
        """
        return dict(self._snapshot(thread_id, checkpoint_id).values)

    def _snapshot(self, thread_id: str, checkpoint_id: str | None = None) -> StateSnapshot:
        """The thread's checkpoint as the graph reads it (its newest by default)."""
        self._settle(check_thread_id(thread_id))
        snapshot = self.graph.get_state(self.run_config(check_thread_id(thread_id), checkpoint_id))
        if checkpoint_id is not None and snapshot.metadata is None:  # LangGraph: empty state
            raise unknown_checkpoint(thread_id, checkpoint_id, self.location)
        return snapshot

    def _require_checkpoint(self, thread_id: str, checkpoint_id: str) -> None:
        """Refuse a fork from a checkpoint the thread does not have (it would start empty)."""
        if self.checkpointer.get_tuple(self.run_config(thread_id, checkpoint_id)) is None:
            raise unknown_checkpoint(thread_id, checkpoint_id, self.location)

    def topics(self, thread_id: str) -> list[TopicSummary]:
        """Every topic of the thread with its status, size, brief, memory score, tier, links."""
        thread_id = check_thread_id(thread_id)
        with self._files(thread_id):
            values = self.state(thread_id)
            store = self.services.branch_stores(thread_id, values).topic_store
            registry = values.get("topics", {})
            people = {m.name for m in values.get("messages", []) if m.name}
            summaries: list[TopicSummary] = []
            for topic_id in store.topic_ids():
                meta = store.meta(topic_id)
                record = registry.get(topic_id)
                brief = readable_brief(meta["brief"], people)
                summary: TopicSummary = {
                    "id": topic_id,
                    "name": meta["name"],
                    "status": record["status"] if record else "unregistered",
                    "message_count": meta["message_count"],
                    "brief": brief,
                    "parent_id": meta["parent_id"],
                    "scores": record["scores"] if record else [],
                    "created_at": meta["created_at"],
                    "last_active_at": (record["last_active_at"] if record else meta["updated_at"]),
                }
                if "brief_card" in meta:
                    card = meta["brief_card"]
                    same = card["text"] == meta["brief"]
                    summary["brief_card"] = {**card, "text": brief} if same else card
                if record and record.get("children"):
                    summary["children"] = list(record["children"])
                links = store.links(topic_id)
                if links:
                    summary["links"] = [{"topic_id": other, "kind": kind} for other, kind in links]
                if record and record["status"] != "split":  # scored through its subtopics
                    scored = self._memory_score(record, values)
                    summary["memory_score"], summary["tier"] = scored.score, scored.tier
                    summary["usage"] = record.get("usage", {})
                summaries.append(summary)
            return summaries

    def _memory_score(self, record: TopicRecord, values: Mapping[str, Any]) -> MemoryScore:
        """The score a review would judge the topic by now: on the thread's own clock."""
        # Without the review's input keys, review_time reads the thread's clock.
        thread = {"messages": values.get("messages") or []}
        now = review_time(thread, self.services.clock, self.settings.review_clock)
        return memory_score(record, now, decay_days=self.settings.score_decay_days)

    def pin(self, thread_id: str, topic_id: str) -> MemoryScore:
        """Pin a topic: a user signal that raises its memory score (seed 004 §2.3).

        Returns:
            The topic's memory score and tier after the change.

        Raises:
            InputError: An invalid thread id or a topic the thread does not have (nothing is
                written).
            ThreadBusyError: Another writer kept the thread longer than the timeout.
        """
        return self._signal(thread_id, topic_id, pinned=True)

    def unpin(self, thread_id: str, topic_id: str) -> MemoryScore:
        """Take a topic's pin away (see ``pin``)."""
        return self._signal(thread_id, topic_id, pinned=False)

    def rate(self, thread_id: str, topic_id: str, rating: int) -> MemoryScore:
        """Rate a topic from 1 to 5 (0 clears the rating); the score reads ``rating / 5``.

        Raises:
            InputError: A bad rating, an invalid thread id or an unknown topic (nothing is
                written).
            ThreadBusyError: Another writer kept the thread longer than the timeout.
        """
        return self._signal(thread_id, topic_id, rating=check_rating(rating))

    def _signal(
        self,
        thread_id: str,
        topic_id: str,
        *,
        pinned: bool | None = None,
        rating: int | None = None,
    ) -> MemoryScore:
        """Write a user signal into the registry as a checkpoint of its own, under the lock."""
        thread_id = check_thread_id(thread_id)
        with self.writing(thread_id), self._files(thread_id):
            self._finish_interrupted(thread_id)  # never drop a cut-short turn's message
            values = self.state(thread_id)
            topics = with_signal(
                values.get("topics") or {},
                topic_id,
                pinned=pinned,
                rating=rating,
                thread_id=thread_id,
            )
            # As the end of a turn would: the next turn starts from it, nothing is pending.
            self.graph.update_state(
                self.run_config(thread_id), {"topics": topics}, as_node="bookkeeping"
            )
            prune_checkpoints(self.checkpointer, thread_id, self.keep_checkpoints)
            return self._memory_score(topics[topic_id], values)

    def transcript(self, thread_id: str) -> list[StoredMessage]:
        """The full conversation recovered from the topics and the working set, in order."""
        thread_id = check_thread_id(thread_id)
        with self._files(thread_id):
            values = self.state(thread_id)
            store = self.services.branch_stores(thread_id, values).topic_store
            working = stored_view(values.get("messages", []))
            return [*store.transcript(), *unsplit_messages(working, store)]

    def set_workflow(
        self, thread_id: str, workflow: Mapping[str, Any] | WorkflowSource | None
    ) -> None:
        """Give the thread a workflow; its active path tops the system prompt (seed 001 T4).

        Args:
            thread_id: The conversation thread.
            workflow: A DAG (``{"id", "name", "nodes": [{"id", "name", "status", "summary"}],
                "edges": [[from_id, to_id], …]}``), checked and kept in the data directory; or
                a ``WorkflowSource`` such as ``LangGraphWorkflow(app, config)``, kept in this
                process only; or ``None`` to take the thread's workflow away.

        Raises:
            InputError: An invalid DAG (one line naming the problem); nothing is written.
        """
        thread_id = check_thread_id(thread_id)
        stored = StoredWorkflow(workflow_file(self.settings.data_dir, thread_id))
        if workflow is None:
            self.services.workflows.detach(thread_id)
            stored.clear()
        elif isinstance(workflow, Mapping):
            dag = parse_dag(workflow, f"workflow of thread {thread_id!r}")
            stored.save(dag)
            self.services.workflows.detach(thread_id)
        elif isinstance(workflow, WorkflowSource):
            self.services.workflows.attach(thread_id, workflow)
        else:
            raise InputError(
                f"workflow of thread {thread_id!r}: expected a DAG mapping or a WorkflowSource "
                f"(e.g. LangGraphWorkflow), got {type(workflow).__name__}"
            )

    def update_workflow_node(
        self,
        thread_id: str,
        node_id: str,
        *,
        status: str | None = None,
        summary: str | None = None,
    ) -> WorkflowDag:
        """Change one step of the thread's stored workflow (its status, its output summary).

        Returns:
            The updated DAG.

        Raises:
            InputError: The thread has no stored workflow (none, or a LangGraph one, whose
                statuses come from its checkpoints), no step ``node_id``, or a bad status.
        """
        thread_id = check_thread_id(thread_id)
        source = self.services.workflows.source_for(thread_id, self.settings.data_dir)
        if source is not None and not isinstance(source, StoredWorkflow):
            raise InputError(
                f"thread {thread_id!r}: its workflow is attached in code (a LangGraph graph "
                "reports its own progress); set a DAG to update steps by hand"
            )
        stored = StoredWorkflow(workflow_file(self.settings.data_dir, thread_id))
        if not stored.exists():
            raise InputError(
                f"thread {thread_id!r}: no workflow is set (TopicMemory.set_workflow, or "
                "langgraph-topics workflow set)"
            )
        return stored.update_node(node_id, status=status, summary=summary)

    def workflow(self, thread_id: str) -> WorkflowDag | None:
        """The thread's workflow as it stands now (None when it has none).

        Raises:
            InputError: The workflow cannot be loaded (a turn would skip it; this says why).
        """
        thread_id = check_thread_id(thread_id)
        source = self.services.workflows.source_for(thread_id, self.settings.data_dir)
        if source is None:
            return None
        try:
            return parse_dag(source.load(), f"workflow of thread {thread_id!r}")
        except WorkflowUnavailable as error:
            raise InputError(str(error)) from None

    def expand(self, thread_id: str, fact: object) -> list[StoredMessage]:
        """The original messages a summary card's fact was taken from (seed 001 T3).

        Args:
            thread_id: The conversation thread (it must exist: nothing is created).
            fact: A fact of a card (``summary_card`` of a topic result, ``brief_card`` of a
                topic: any dict with ``message_ids``), a list of message ids, or one id.

        Returns:
            The messages, full text, in the order the fact cites them (each once), from the
            topic files or the working set.

        Raises:
            InputError: An invalid thread id, a thread that does not exist, something that is
                not a fact, or ids the thread does not hold (all of them named).
        """
        ids = fact_message_ids(fact)
        thread_id = check_thread_id(thread_id)
        if not self.exists(thread_id):
            raise InputError(f"no thread {thread_id!r} in {self.location}")
        with self._files(thread_id):
            values = self.state(thread_id)
            store = self.services.branch_stores(thread_id, values).topic_store
            working = {m["id"]: m for m in stored_view(values.get("messages", []))}
            found = {**store.get_messages([i for i in ids if i not in working]), **working}
        missing = [i for i in ids if i not in found]
        if missing:
            raise InputError(f"thread {thread_id!r} holds no message {', '.join(missing)}")
        return [found[i] for i in ids]

    def search(
        self,
        thread_id: str,
        query: str,
        *,
        limit: int = 10,
        since: datetime | None = None,
        until: datetime | None = None,
        expand: bool = True,
    ) -> list[SearchHit]:
        """Where the thread talked about ``query``: its best messages, with date and topic.

        Searches every message, split into topics or not, as a turn's evidence does (no model
        call, nothing written), and the terms the thread relates to the query's (``"auth"`` →
        login, jwt, token when it uses them together), weighing less; ``expand`` (the method)
        gives a hit's whole text.

        Args:
            thread_id: The conversation thread (it must exist: nothing is created).
            query: Free text, any language the embedder handles.
            limit: At most this many hits, best first.
            since: Only messages sent at or after this time (undated messages left out).
            until: Only messages sent at or before this time (likewise).
            expand: Whether related terms are searched too (False: the query's own only).

        Raises:
            InputError: An invalid thread id, a thread that does not exist, or a limit that
                is not positive.
        """
        thread_id = check_thread_id(thread_id)
        if limit <= 0:
            raise InputError(f"limit must be positive, got {limit}")
        if not self.exists(thread_id):
            raise InputError(f"no thread {thread_id!r} in {self.location}")
        with self._files(thread_id):
            values = self.state(thread_id)
            stores = self.services.branch_stores(thread_id, values)
            working = stored_view(values.get("messages", []))
            return search_history(
                self.services,
                stores,
                working,
                values.get("topics") or {},
                query,
                limit=limit,
                since=since,
                until=until,
                expand=expand,
            )

    def themes(self, thread_id: str) -> list[ThemeSummary]:
        """The concepts the thread comes back to, the most talked about first (``history``).

        Computed natively from the refined turns the review records (no model call), then
        cached until a split or a review changes the thread. With a cheap model configured,
        the most talked about themes are also named by it from their material only
        (``phrased``; ``history.phrasing``), once per cached view. Split messages without a
        record (split before the history layer existed) are recorded first.

        Raises:
            InputError: An invalid thread id, or a thread that does not exist.
        """
        thread_id = self._existing(thread_id)
        with self._files(thread_id):
            values = self.state(thread_id)
            stores = self.services.branch_stores(thread_id, values)
            working = stored_view(values.get("messages", []))
            view = history_view(stores, unsplit_messages(working, stores.topic_store))
            summaries = theme_summaries(view, values.get("topics") or {})
        # Phrased outside the thread's lock: a slow model does not hold the thread.
        phrases = self._phrases(view, view.themes[:PHRASED_THEMES])
        for summary in summaries:
            if (phrase := phrases.get(summary["theme_id"])) is not None:
                summary["phrased"] = phrase
        return summaries

    def trace(self, thread_id: str, theme_or_query: str) -> ThemeTrace | None:
        """Where and how the thread discussed something: a theme's timeline, quoted.

        ``theme_or_query`` names a theme (one of its keywords, as ``themes`` lists them) or
        is free text: then the theme holding the messages ``search`` finds best is traced.
        The timeline lists, oldest first, each event unit carrying the theme (first mention,
        last mention) with quotes of the original messages (ids, dates, topics), and the
        changes of state stated on the way ("we chose X", "switch to Y", "we dropped X").
        With a cheap model configured, the theme's ``phrased`` name and summary are added.

        Returns:
            The trace, or None when nothing in the thread matches.

        Raises:
            InputError: An invalid thread id, or a thread that does not exist.
        """
        thread_id = self._existing(thread_id)
        if not theme_or_query.strip():
            return None
        with self._files(thread_id):
            values = self.state(thread_id)
            stores = self.services.branch_stores(thread_id, values)
            topics = values.get("topics") or {}
            working = stored_view(values.get("messages", []))
            unsplit = unsplit_messages(working, stores.topic_store)
            view = history_view(stores, unsplit)

            def search(query: str) -> list[SearchHit]:
                return search_history(self.services, stores, working, topics, query, limit=20)

            found = find_theme(view, theme_or_query, search)
            if found is None:
                return None
            theme, matched_by = found
            ids = [
                i for u in theme.units for t in view.units[u].turns for i in view.turns[t]["ids"]
            ]
            messages = {**stores.topic_store.get_messages(ids), **{m["id"]: m for m in unsplit}}
        trace = trace_theme(
            view, theme, "search" if matched_by == "search" else "theme", messages, topics
        )
        if (phrase := self._phrases(view, [theme]).get(theme.id)) is not None:
            trace["phrased"] = phrase
        return trace

    def _phrases(self, view: HistoryView, themes: Sequence[Theme]) -> dict[str, ThemePhrase]:
        """The cheap model's phrases of ``themes`` (none natively), within the deadline."""
        phraser = self.services.roles.theme_phraser
        if phraser is None or not themes:
            return {}
        with settings_deadline(self.settings):
            return phrased_themes(view, phraser, themes)

    def _existing(self, thread_id: str) -> str:
        """The checked id of a thread that exists (else one ``InputError`` line)."""
        thread_id = check_thread_id(thread_id)
        if not self.exists(thread_id):
            raise InputError(f"no thread {thread_id!r} in {self.location}")
        return thread_id

    def related_terms(self, thread_id: str, query: str) -> list[str]:
        """The words ``search`` also looks for: those this thread relates to the query's.

        Learned from the thread itself (which words its messages use together, and about
        what), heaviest first; empty when the thread relates none (``docs/search.md``).

        Raises:
            InputError: An invalid thread id or a thread that does not exist.
        """
        thread_id = self._existing(thread_id)
        with self._files(thread_id):
            stores = self.services.branch_stores(thread_id, self.state(thread_id))
            return related_words(stores.message_index, stores.topic_store, query)

    def review(
        self,
        thread_id: str,
        now: str | datetime | None = None,
        *,
        archive_guard: ArchiveGuard | None = None,
    ) -> ReviewRecord:
        """Review the thread's topics (seed 000 §4.8): refresh, merge, archive.

        Refreshes the briefs of topics touched since the last review, merges near-duplicate
        topics and archives long-dormant topics and one-off questions (``docs/review.md``).
        Holds the thread's writer lock; run twice, the second run
        changes nothing.

        Args:
            thread_id: The conversation thread (it must exist: nothing is created).
            now: The time to judge by (``datetime`` or ISO-8601 text). By default the thread's
                own clock: its latest message's time, or now while the thread is live
                (``review.clock``; ``Settings.review_clock="wall"``: always now).
            archive_guard: Keeps topics the criteria would archive (``ArchiveGuard``).

        Returns:
            What the review did.

        Raises:
            InputError: An invalid thread id or ``now``, or a thread that does not exist.
            ThreadBusyError: Another writer kept the thread longer than the timeout.
        """
        when = now.isoformat() if isinstance(now, datetime) else now
        if when is not None:
            parse_now(when)  # a bad time is refused before anything is locked or written
        values = self._run_review(thread_id, {"review_now": when}, archive_guard)
        self._refine_history(check_thread_id(thread_id))
        return cast(ReviewRecord, values["review"])

    def _refine_history(self, thread_id: str) -> None:
        """Record the refined turns of the exchanges split since the last (``history``).

        Done by the review, off every turn, rather than by each split: building the records
        cost 2-3 ms of CPU an exchange, 4-5 ms per model call of an agent (``bench agent``).
        ``themes`` and ``trace`` record what is still missing. Derived data: a failed append
        (a full disk) costs the review nothing, the next question records them.
        """
        try:
            with self._files(thread_id):
                backfill(self.services.branch_stores(thread_id, self.state(thread_id)))
        except OSError as error:
            log.warning(
                "%s: refined turns not recorded (recorded when next asked for): %s",
                thread_id,
                error,
            )

    def archive(self, thread_id: str, topic_id: str) -> str:
        """Archive one topic now, as a review would file it (docs/review.md).

        Returns:
            The topic's status afterwards (``archived``; archiving it again changes nothing).

        Raises:
            InputError: An invalid thread id, a missing thread, or a topic it does not have.
            ThreadBusyError: Another writer kept the thread longer than the timeout.
        """
        return self._request(thread_id, topic_id, "archive")

    def restore(self, thread_id: str, topic_id: str) -> str:
        """Bring an archived topic back (dormant: the next turns activate it when relevant).

        Returns:
            The topic's status afterwards (``dormant``; a topic that is not archived keeps its
            status).

        Raises:
            InputError: An invalid thread id, a missing thread, or a topic it does not have.
            ThreadBusyError: Another writer kept the thread longer than the timeout.
        """
        with self.writing(check_thread_id(thread_id)):
            status = self._request(thread_id, topic_id, "restore")
            store = self.services.stores(thread_id).topic_store
            if status != "archived" and isinstance(store, ReviewableTopicStore):
                store.drop_archive(topic_id)  # the state no longer points at it: safe to drop
        return status

    def archived(self, thread_id: str, month: str | None = None) -> list[ArchivedTopic]:
        """The thread's archived topics' summaries, month by month (a date query, §4.8).

        Args:
            thread_id: The conversation thread.
            month: Only those filed under this ``YYYY-MM`` (or ``YYYY``) when given.
        """
        thread_id = check_thread_id(thread_id)
        with self._files(thread_id):
            values = self.state(thread_id)
            store = self.services.branch_stores(thread_id, values).topic_store
            registry = values.get("topics", {})
            if not isinstance(store, ReviewableTopicStore):
                return []
            people = {m.name for m in values.get("messages", []) if m.name}
            return [
                _readable_entry(entry, people)
                for entry in store.archive_entries()
                if registry.get(entry["topic_id"], {}).get("status") == "archived"
                and (month is None or entry["month"].startswith(month))
            ]

    def _request(self, thread_id: str, topic_id: str, action: Literal["archive", "restore"]) -> str:
        thread_id = check_thread_id(thread_id)
        if not self.exists(thread_id):
            raise InputError(f"no thread {thread_id!r} in {self.location}")
        with self.writing(thread_id):
            values = self.state(thread_id)
            if topic_id not in values.get("topics", {}):
                store = self.services.branch_stores(thread_id, values).topic_store
                merged = None
                if isinstance(store, ReviewableTopicStore):
                    try:
                        merged = store.merged_into(topic_id)
                    except KeyError:
                        merged = None
                where = f" (merged into {merged})" if merged else ""
                raise InputError(f"thread {thread_id!r} has no topic {topic_id!r}{where}")
            request: ReviewRequest = {"action": action, "topic_id": topic_id}
            result = self._run_review(thread_id, {"review_request": request})
        return str(result["topics"][topic_id]["status"])

    def _run_review(
        self, thread_id: str, payload: ReviewInput, archive_guard: ArchiveGuard | None = None
    ) -> dict[str, Any]:
        """Run the review graph on the thread, holding its locks, as ``run_turn`` runs a turn."""
        thread_id = check_thread_id(thread_id)
        if not self.exists(thread_id):
            raise InputError(f"no thread {thread_id!r} in {self.location}")
        with self.writing(thread_id), self._files(thread_id):
            # A turn cut short first: its saved input would not survive the review's checkpoint.
            self._finish_interrupted(thread_id)
            result = cast(
                dict[str, Any],
                self.review_graph.invoke(
                    payload,
                    self.run_config(thread_id),
                    context=ReviewContext(services=self.services, archive_guard=archive_guard),
                    durability=DURABILITY,
                ),
            )
            prune_checkpoints(self.checkpointer, thread_id, self.keep_checkpoints)
            return result

    def exists(self, thread_id: str) -> bool:
        """Whether the thread has a checkpoint or stored topics (looking creates nothing)."""
        thread_id = check_thread_id(thread_id)
        if self.checkpointer.get_tuple(self.run_config(thread_id)) is not None:
            return True
        if self._profile is not None:  # topics a crash left before the first checkpoint
            return self._shared_head(thread_id) > 0
        return thread_directory(Path(self.settings.data_dir), thread_id).is_dir()

    def require_checkpoints(self, thread_id: str) -> None:
        """Refuse a thread that lost its checkpoints (it had some, or topic files hold messages).

        That is a checkpoint database deleted or emptied: a turn would start the thread over
        and ``check`` would take the stored messages for other branches'. A thread not split
        yet has no topic file; its ``.checkpointed`` mark (``checkpointed_mark``) tells it.
        Cheap for a thread with a checkpoint (one index row); the topic files are read only
        when there is none.

        Raises:
            LostCheckpointsError: Naming the database, the topic files and how many messages
                they hold (an ``InputError``: nothing was written).
        """
        thread_id = check_thread_id(thread_id)
        config = self.run_config(thread_id)
        if self._profile is not None or self.checkpointer.get_tuple(config) is not None:
            return
        root = thread_directory(Path(self.settings.data_dir), thread_id)
        audit = audit_topic_files(root, None)  # read only: no lock, which would create files
        stored = len(audit.branch.keys() | audit.elsewhere.keys())
        # A first turn checkpoints its input before any split writes a topic file and before
        # the mark is written, so a checkpoint that appeared meanwhile means another process
        # just began the thread.
        if (stored or is_marked(root)) and self.checkpointer.get_tuple(config) is None:
            database = checkpoint_database(self.settings.data_dir)
            raise lost_checkpoints(thread_id, database, root, stored)

    def held_ids(self, thread_id: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` the thread holds, in its working set or its topics."""
        with self.reading(thread_id):
            return set(self._held_messages(check_thread_id(thread_id), ids))

    def check(self, thread_id: str, checkpoint_id: str | None = None) -> CheckReport:
        """Check invariants 1–3 of the design for a thread, as one branch of it sees them.

        Args:
            thread_id: The conversation thread (it must exist: nothing is created).
            checkpoint_id: The branch to check, by one of its checkpoints; the newest by
                default.

        Returns:
            Every finding, each naming the ids, files and lines concerned. Records a crash cut
            short before their checkpoint, and records of other branches, are reported as
            notes: they are unseen, and nothing is lost.

        Raises:
            InputError: An invalid thread id, or a thread that does not exist.
            LostCheckpointsError: Its topic files hold messages and it has no checkpoint.
            DamagedStoreError: The checkpoint database has damaged pages (SQLite's quick
                check, read whole: a turn would meet them only when it reads one).
            UnknownCheckpointError: ``checkpoint_id`` is not one of the thread's checkpoints.
        """
        thread_id = check_thread_id(thread_id)
        self._settle(thread_id)
        if not self.exists(thread_id):
            raise InputError(f"no thread {thread_id!r} in {self.location}")
        self.require_checkpoints(thread_id)
        self._require_sound_database()
        report = CheckReport()
        with self._files(thread_id):
            snapshot = self._snapshot(thread_id, checkpoint_id)
            values = dict(snapshot.values)
            ranges = branch_ranges(values)
            root = thread_directory(Path(self.settings.data_dir), thread_id)
            audit = audit_topic_files(root, ranges)  # before the store cuts torn lines
            store = self.services.stores(thread_id, ranges).topic_store
            if isinstance(store, BaseStoreTopicStore):  # no files: the shared store's records
                audit = audit_store_records(store.stored_records(), ranges)
            located = store.message_ids()
            cut_short = checkpoint_id is None and self.interrupted(thread_id)
            check_links(report, store)
            refined = self.services.stores(thread_id, ranges).refined_turns
            if isinstance(store, JsonlTopicStore) and checkpoint_id is None:
                check_time_index(report, root / TOPICS_DIR / TIME_INDEX_FILE, store.time_index())
        working_ids = [m.id or "" for m in values.get("messages", [])]
        total = values.get("total_messages", 0)
        last_seen = values.get("last_seen_id")
        if cut_short:
            # The turn's input is saved, its first step (which counts it) has not run yet.
            start = working_ids.index(last_seen) + 1 if last_seen in working_ids else 0
            arrived = working_ids[start:]
            report.note(
                f"a turn was cut short: {len(arrived)} arrived messages are saved but not yet "
                f"counted; the next turn (or resume) finishes it: {arrived[:5]}"
            )
            total += len(arrived)
        elif (snapshot.metadata or {}).get("source") in ("update", "input") and (
            last_seen is None or last_seen in working_ids
        ):
            # Messages ``update_state`` added (Studio's state editor, a fork), or a turn's
            # input checkpointed before its first step: the next turn on this branch counts
            # them, as it counts any message after the last counted one.
            start = 0 if last_seen is None else working_ids.index(last_seen) + 1
            added = working_ids[start:]
            if added:
                report.note(
                    f"{len(added)} messages added by update_state (or a turn's input) are not "
                    f"counted yet; the next turn on this branch counts them: {added[:5]}"
                )
                total += len(added)
                edits = [i for i in added if i in located]
                if edits:
                    # Not a second copy: the next turn keeps each as a message of its own,
                    # under a new id (``nodes/estimate``), the topic's copy unchanged.
                    report.note(
                        f"{len(edits)} of them reuse the id of a message a topic holds; the "
                        f"next turn keeps each under a new id: {edits[:5]}"
                    )
                    working_ids = working_ids[:start] + [
                        f"{i} (edit)" if i in located else i for i in added
                    ]
        check_partition(report, working_ids, located, total)
        check_topic_files(report, audit, working_ids)
        if refined is not None:
            check_refined_turns(report, refined, located, working_ids, audit.elsewhere)
        if len(set(working_ids) | set(located)) < total:
            lost = self._lost_ids(thread_id, checkpoint_id, set(working_ids) | set(located))
            if lost:
                report.fail(
                    f"invariant 1: lost messages (seen in earlier checkpoints): {lost[:10]}; "
                    f"`langgraph-topics repair --thread {shlex.quote(thread_id)} --data-dir "
                    f"{shlex.quote(self.location)}` "
                    "restores them from those checkpoints"
                )
        context = values.get("context")
        if context and context["recent_ids"] and context["recent_ids"][-1] in working_ids:
            newest = working_ids.index(context["recent_ids"][-1])
            expected = working_ids[max(0, newest + 1 - self.settings.keep_recent) : newest + 1]
            check_context(
                report,
                context,
                expected,
                values.get("topic_results", {}),
                prior_families(values.get("topics") or {}),
            )
        else:
            report.note("invariants 2-3: no current assembled window to check")
        return report

    def _require_sound_database(self) -> None:
        """Refuse to check on a checkpoint database SQLite finds damaged (``check`` only)."""
        if self._profile is not None:
            return
        database = checkpoint_database(self.settings.data_dir)
        if database_state(database) == "damaged":
            raise checkpoint_fault(
                sqlite3.DatabaseError("quick_check: database disk image is malformed"), database
            )

    def _lost_ids(self, thread_id: str, checkpoint_id: str | None, held: set[str]) -> list[str]:
        """Ids that earlier checkpoints of the branch held and that are held nowhere now."""
        lost: dict[str, None] = {}
        config: RunnableConfig | None = self.run_config(thread_id, checkpoint_id)
        while config is not None:
            snapshot = self.graph.get_state(config)
            if not snapshot.values:  # older checkpoints were pruned
                break
            for message in snapshot.values.get("messages", []):
                if message.id and message.id not in held:
                    lost.setdefault(message.id)
            config = snapshot.parent_config
        return list(lost)
