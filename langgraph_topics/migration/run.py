"""Migrate an embedded data directory to the ``postgres`` profile, thread by thread.

Each thread is copied under the writer locks of both sides, in an order that keeps every
prefix of the work usable by the next run:

1. the checkpoints are compared (a thread the target holds with other data is refused before
   anything of it is written);
2. the topic records are copied, sequence numbers kept (``copy_jsonl_topics``), so the ranges
   the checkpoints record name the same records on the target;
3. the checkpoints are copied, oldest first, with their pending writes;
4. the topic index is filled from the source index, and the target's retrieval cache is built.

Every step skips what the target already holds, so running the migration again finishes what
a crash left, catches up a thread that went on in the source since, and otherwise changes
nothing. Each thread is then verified (``verify``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_topics.errors import InputError
from langgraph_topics.migration.checkpoints import copy_checkpoints, plan_checkpoints
from langgraph_topics.migration.conflicts import ThreadConflict
from langgraph_topics.migration.report import MigrationReport, ThreadMigration
from langgraph_topics.migration.threads import list_threads
from langgraph_topics.migration.topic_briefs import (
    indexed_topics,
    read_source_index,
    upsert_topics,
)
from langgraph_topics.migration.verify import verify_thread
from langgraph_topics.services import thread_directory
from langgraph_topics.settings import Settings

if TYPE_CHECKING:
    from langgraph.checkpoint.base import CheckpointTuple

    from langgraph_topics.memory import TopicMemory
    from langgraph_topics.stores.protocols import Embedder

Progress = Callable[[str, str, int, int], None]
"""Called as work advances: (thread id, step, done, total)."""


@dataclass(frozen=True)
class MigrationTarget:
    """Where threads go: the ``postgres`` profile's database and this machine's caches."""

    postgres_uri: str
    cache_dir: Path
    """The target's ``data_dir``: its retrieval caches (and its topic index, without
    ``chroma_url``). It must not be the source directory."""
    chroma_url: str | None = None
    """A Chroma server for the target's topic index."""


def _settings(
    source_dir: Path, target: MigrationTarget, budget_tokens: int | None
) -> tuple[Settings, Settings]:
    base = Settings(store="embedded", data_dir=source_dir)
    if budget_tokens is not None:
        base = replace(base, budget_tokens=budget_tokens)
    if Path(target.cache_dir).resolve() == Path(source_dir).resolve():
        raise InputError(
            f"{target.cache_dir}: the target's data directory (its retrieval cache) must not be "
            "the source data directory; pass another one"
        )
    target_settings = replace(
        base,
        store="postgres",
        postgres_uri=target.postgres_uri,
        chroma_url=target.chroma_url,
        data_dir=Path(target.cache_dir),
    )
    return base, target_settings


def open_memories(
    source_dir: Path,
    target: MigrationTarget,
    *,
    budget_tokens: int | None = None,
    embedder: Embedder | None = None,
) -> tuple[TopicMemory, TopicMemory]:
    """The source (embedded) and target (``postgres``) memories, on the same offline roles.

    Verification assembles context windows on both sides: the native back ends make them
    deterministic and free of model calls, whatever models the environment names.
    """
    from langgraph_topics.memory import TopicMemory
    from langgraph_topics.roles.native import native_roles
    from langgraph_topics.stores.embeddings import CachingEmbedder, UseEmbedder

    source_settings, target_settings = _settings(source_dir, target, budget_tokens)
    shared = CachingEmbedder(embedder or UseEmbedder())
    source = TopicMemory(
        settings=source_settings,
        roles=native_roles(shared, source_settings),
        embedder=shared,
    )
    try:
        target_memory = TopicMemory(
            settings=target_settings,
            roles=native_roles(shared, target_settings),
            embedder=shared,
        )
    except BaseException:
        source.close()
        raise
    return source, target_memory


def _check_went_on(source: TopicMemory, thread_id: str, behind: CheckpointTuple) -> None:
    """Refuse a target copy whose newest messages the source's thread does not hold.

    The source deleted that checkpoint since (retention): its messages must still be the
    source's, or the target's thread went on by itself (another history).
    """
    messages = behind.checkpoint["channel_values"].get("messages", [])
    ids = [message.id for message in messages if getattr(message, "id", None)]
    if not ids:
        return
    held = {message["id"] for message in source.transcript(thread_id)}
    foreign = [message_id for message_id in ids if message_id not in held]
    if foreign:
        checkpoint_id = behind.config["configurable"]["checkpoint_id"]
        raise ThreadConflict(
            thread_id,
            f"the target has checkpoint {checkpoint_id} that the source does not, holding "
            f"messages the source does not: {', '.join(foreign[:3])}",
        )


def _copy_topics(source: TopicMemory, target: TopicMemory, thread_id: str) -> tuple[int, int]:
    """Copy the thread's topic records; returns (records written, topics on the target)."""
    from langgraph_topics.stores.base_store_topics import BaseStoreTopicStore, copy_jsonl_topics
    from langgraph_topics.stores.topic_store import JsonlTopicStore

    root = thread_directory(Path(source.settings.data_dir), thread_id)
    stores = target.services.stores(thread_id)
    target_store = stores.topic_store
    if not isinstance(target_store, BaseStoreTopicStore):
        raise InputError(f"thread {thread_id!r}: the target does not keep topics in its store")
    if not root.is_dir():  # no split yet: the thread lives in its checkpoints only
        return 0, len(target_store.topic_ids())
    # Every record, of every branch: the checkpoints' ranges choose what each branch sees.
    written = copy_jsonl_topics(JsonlTopicStore(root), target_store)
    return written, len(target_store.topic_ids())


def _fill_indexes(
    source: TopicMemory, target: TopicMemory, thread_id: str, *, copied: bool
) -> None:
    """Build the target's retrieval cache, and fill its topic index from the source's.

    The index is written again when this run copied anything (briefs and statuses change
    with turns) or when it lacks topics (a run cut short while filling it); otherwise it
    already holds what the source's does.
    """
    # Opened again so that the retrieval cache embeds the copied messages it lacks.
    target.services.forget_stores(thread_id)
    stores = target.services.stores(thread_id)
    entries = read_source_index(Path(source.settings.data_dir), thread_id)
    topics = indexed_topics(entries, stores.topic_store)
    if copied or stores.topic_index.count() != len(topics):
        upsert_topics(stores.topic_index, topics)


def migrate_thread(
    source: TopicMemory,
    target: TopicMemory,
    thread_id: str,
    *,
    progress: Progress | None = None,
) -> ThreadMigration:
    """Copy one thread (idempotent; see the module docstring) and verify it.

    Raises:
        ThreadConflict: The target holds the thread with other data; nothing of it is written.
        ThreadBusyError: A writer of either side kept the thread past the lock timeout.
    """
    row = ThreadMigration(thread_id=thread_id)

    def report(step: str, done: int, total: int) -> None:
        if progress is not None:
            progress(thread_id, step, done, total)

    source_saver = source.checkpointer
    if not isinstance(source_saver, SqliteSaver):
        raise InputError(f"thread {thread_id!r}: the source is not an embedded data directory")
    with source.writing(thread_id), target.writing(thread_id):
        plan = plan_checkpoints(source_saver, target.checkpointer, thread_id)
        if plan.behind is not None:
            _check_went_on(source, thread_id, plan.behind)
        row.checkpoints = plan.total
        report("topics", 0, 1)
        try:
            row.copied_records, row.topics = _copy_topics(source, target, thread_id)
        except ValueError as error:  # records the target holds with other content
            if isinstance(error, ThreadConflict):
                raise
            raise ThreadConflict(thread_id, f"topics: {error}") from None
        report("checkpoints", 0, len(plan.to_copy))
        row.copied_checkpoints = copy_checkpoints(
            source_saver,
            target.checkpointer,
            plan,
            on_copied=lambda done, total: report("checkpoints", done, total),
        )
        report("indexes", 0, 1)
        copied = bool(row.copied_records or row.copied_checkpoints or plan.unfinished_writes)
        _fill_indexes(source, target, thread_id, copied=copied)
    report("verify", 0, 1)
    row.verification = verify_thread(source, target, thread_id)
    row.messages = row.verification.messages
    report("done", 1, 1)
    return row


def migrate_data_dir(
    source_dir: Path,
    target: MigrationTarget,
    *,
    threads: Sequence[str] | None = None,
    budget_tokens: int | None = None,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
) -> MigrationReport:
    """Migrate threads of an embedded data directory to the ``postgres`` profile.

    Args:
        source_dir: The embedded data directory (it is only read).
        target: The target database and this machine's cache directory for it.
        threads: The threads to migrate (default: every thread with a checkpoint).
        budget_tokens: The budget of both sides' verification windows (the source's).
        embedder: Embeds the target's topic index and retrieval cache (default: the
            package's offline embedder, as the embedded profile uses).
        progress: Told of each step of each thread.

    Returns:
        One row per thread; ``ok`` when every thread passed ``check`` and the context query.

    Raises:
        InputError: Not an embedded data directory, a thread it does not hold, a thread the
            target holds with other data (``ThreadConflict``), or a target that cannot be
            reached.
    """
    from langgraph_topics.stores.postgres_profile import redacted

    known = list_threads(source_dir)
    chosen = list(threads) if threads else known
    missing = [thread_id for thread_id in chosen if thread_id not in known]
    if missing:
        raise InputError(f"{source_dir}: no thread {missing[0]!r} (threads: {len(known)})")
    result = MigrationReport(source=Path(source_dir), target=redacted(target.postgres_uri))
    source, target_memory = open_memories(
        source_dir, target, budget_tokens=budget_tokens, embedder=embedder
    )
    try:
        for thread_id in chosen:
            result.threads.append(
                migrate_thread(source, target_memory, thread_id, progress=progress)
            )
    finally:
        target_memory.close()
        source.close()
    return result
