"""Rebuild threads from what still holds their messages (``langgraph-topics repair``).

A thread's messages live in two places: the topic files (split messages) and the checkpoint
database (the working set). When the database is damaged or lost, or a topic file lost
messages, the thread is rebuilt from the union of:

- every message record the topic files still hold (any branch, any crash-cut split);
- every message the readable checkpoints hold (working sets and saved inputs), newest text;
- the lines ``chat`` kept pending.

The old files are moved (the damaged database) or copied (a healthy one) into
``<data_dir>/repair-<UTC time>/`` first, so a repair loses nothing it does not report; the
thread is then imported again from the recovered messages (same ids, texts and times), which
splits it into topics and indexes it as any import does. Ids the retrieval index or an old
checkpoint knows but whose text is nowhere are reported as gone.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from langgraph_topics.cli.pending_line import PREFIX, live_sessions, read_pending
from langgraph_topics.errors import InputError, ThreadBusyError, first_line
from langgraph_topics.retrieval.message_index import ENTRIES_FILE
from langgraph_topics.services import thread_directory
from langgraph_topics.state.messages import to_langchain
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.checkpoint_salvage import (
    DatabaseState,
    database_state,
    salvage_thread,
    salvage_thread_ids,
)
from langgraph_topics.stores.checkpointed_mark import MARK_FILE
from langgraph_topics.stores.data_layout import CHECKPOINT_DATABASE, checkpoint_database
from langgraph_topics.stores.fd_locks import held_by_another
from langgraph_topics.stores.topic_records import TOPICS_DIR, parse_time
from langgraph_topics.stores.topic_store import JsonlTopicStore
from langgraph_topics.thread_locks import WRITER_LOCK_FILE

if TYPE_CHECKING:
    from langgraph_topics.memory import TopicMemory

REPAIR_DIR_PREFIX = "repair-"
RETRIEVAL_DIR = "retrieval"


@dataclass
class ThreadRepair:
    """What the repair of one thread recovered and what it could not."""

    thread_id: str
    from_topic_files: int = 0
    from_checkpoints: int = 0
    """Messages only the readable checkpoints still held."""
    pending_lines: list[str] = field(default_factory=list)
    """Texts of chat lines kept pending that no store held: imported unanswered, and still
    pending, so that the next ``chat`` of the thread answers them."""
    gone: list[str] = field(default_factory=list)
    """Ids known to the retrieval index or an old checkpoint whose text is nowhere."""
    topics: int = 0
    checkpoints_read: int = 0
    """Checkpoints of the thread that could be read (none: its unsplit messages are unknown)."""
    checkpoints_unreadable: int = 0
    """Checkpoints listed but on damaged pages: the messages only they held are gone."""

    @property
    def recovered(self) -> int:
        """Messages the rebuilt thread holds."""
        return self.from_topic_files + self.from_checkpoints + len(self.pending_lines)


@dataclass
class RepairReport:
    """What ``repair_data_dir`` did."""

    data_dir: Path
    database: DatabaseState
    kept_in: Path
    """Where the previous files are kept."""
    threads: list[ThreadRepair] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every message was recovered (as far as anything still tells)."""
        return not any(
            thread.gone or thread.checkpoints_unreadable or not thread.checkpoints_read
            for thread in self.threads
        )


def _marked_threads(data_dir: Path) -> list[str]:
    """Thread ids the thread directories' ``.checkpointed`` marks name."""
    found: list[str] = []
    for mark in sorted((data_dir / "threads").glob(f"*/{MARK_FILE}")):
        try:
            thread_id = json.loads(mark.read_text("utf-8"))["thread_id"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(thread_id, str):
            found.append(thread_id)
    return found


def _pending_messages(root: Path) -> list[StoredMessage]:
    """The lines ``chat`` sessions of the thread kept pending, as user messages."""
    lines = [read_pending(path) for path in sorted(root.glob(f"{PREFIX}*.json"))]
    return [
        {"id": line.message_id, "role": "user", "content": line.text, "timestamp": line.started_at}
        for line in lines
        if line is not None
    ]


def _indexed_ids(root: Path) -> list[str]:
    """Ids the retrieval index recorded as split (its entries hold no text)."""
    ids: list[str] = []
    try:
        lines = (root / RETRIEVAL_DIR / ENTRIES_FILE).read_text("utf-8").splitlines()
    except OSError:
        return ids
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            ids.append(entry["id"])
    return ids


def _in_time_order(messages: Sequence[StoredMessage]) -> list[StoredMessage]:
    """Messages sorted by time; one without a readable time keeps the time before it."""
    keyed: list[tuple[datetime, int, StoredMessage]] = []
    last = datetime.min.replace(tzinfo=UTC)
    for place, message in enumerate(messages):
        last = parse_time(message.get("timestamp")) or last  # aware: naive counts as UTC
        keyed.append((last, place, message))
    keyed.sort(key=lambda item: (item[0], item[1]))
    return [message for _, _, message in keyed]


@dataclass
class _Gathered:
    repair: ThreadRepair
    messages: list[StoredMessage]


def _gather(data_dir: Path, database: Path, thread_id: str) -> _Gathered:
    """Every message of the thread the topic files, readable checkpoints and pending hold."""
    root = thread_directory(data_dir, thread_id)
    repair = ThreadRepair(thread_id)
    held: dict[str, StoredMessage] = {}
    if (root / TOPICS_DIR).is_dir():
        for message in JsonlTopicStore(root).transcript():
            held.setdefault(message["id"], message)
    repair.from_topic_files = len(held)
    salvaged = salvage_thread(database, thread_id)
    repair.checkpoints_read = salvaged.checkpoints
    repair.checkpoints_unreadable = salvaged.unreadable
    for message_id, message in salvaged.messages.items():
        if message_id not in held:
            held[message_id] = message
            repair.from_checkpoints += 1
    for message in _pending_messages(root):
        if message["id"] not in held:
            held[message["id"]] = message
            repair.pending_lines.append(message["content"])
    repair.gone = [i for i in dict.fromkeys(_indexed_ids(root)) if i not in held]
    return _Gathered(repair, _in_time_order(list(held.values())))


def _fresh_directory(data_dir: Path) -> Path:
    """A new ``repair-<UTC time>[-n]`` directory name: an earlier repair's copies stay whole."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    candidate = data_dir / f"{REPAIR_DIR_PREFIX}{stamp}"
    number = 1
    while candidate.exists():
        number += 1
        candidate = data_dir / f"{REPAIR_DIR_PREFIX}{stamp}-{number}"
    candidate.mkdir()
    return candidate


def _set_aside(source: Path, kept_in: Path) -> None:
    """Move ``source`` under ``kept_in`` (same relative name), when it exists."""
    if source.exists():
        kept_in.mkdir(parents=True, exist_ok=True)
        source.rename(kept_in / source.name)


def repair_data_dir(
    data_dir: Path,
    open_memory: Callable[[], TopicMemory],
    thread_ids: Sequence[str] = (),
) -> RepairReport:
    """Rebuild threads of an embedded data directory from what still holds their messages.

    Args:
        data_dir: The data directory.
        open_memory: Opens the memory the threads are imported into again (its settings:
            models, budget); called after the damaged database is set aside.
        thread_ids: Threads to rebuild whatever the state of the database. A damaged or
            missing database adds every thread it (what of it can be read) or the threads'
            ``.checkpointed`` marks name; a healthy one, when none is named, the marked threads
            that lost their checkpoints.

    Raises:
        InputError: Not a data directory, or no thread to repair.
    """
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise InputError(f"{data_dir}: no such data directory")
    database = checkpoint_database(data_dir)
    state = database_state(database)
    known = list(dict.fromkeys([*salvage_thread_ids(database), *_marked_threads(data_dir)]))
    wanted = list(dict.fromkeys(thread_ids))
    if state != "healthy":  # one database serves every thread: each is rebuilt, or lost
        wanted = list(dict.fromkeys([*wanted, *known]))
    elif not wanted:
        alive = set(salvage_thread_ids(database))
        wanted = [t for t in _marked_threads(data_dir) if t not in alive]
    if not wanted:
        raise InputError(
            f"{data_dir}: nothing to repair (the checkpoint database is {state}); name a "
            "thread with --thread to rebuild it from its topic files and checkpoints"
        )
    _refuse_threads_in_use(data_dir, wanted)
    gathered = [_gather(data_dir, database, thread_id) for thread_id in wanted]
    kept_in = _fresh_directory(data_dir)
    report = RepairReport(data_dir=data_dir, database=state, kept_in=kept_in)
    if state == "damaged":
        for suffix in ("", "-wal", "-shm", "-journal"):
            _set_aside(data_dir / f"{CHECKPOINT_DATABASE}{suffix}", kept_in)
    elif state == "healthy":
        kept_in.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(database)) as source:
            with closing(sqlite3.connect(kept_in / CHECKPOINT_DATABASE)) as copy:
                source.backup(copy)
    for thread_id in wanted:
        _set_aside(thread_directory(data_dir, thread_id), kept_in / "threads")
    memory = open_memory()
    try:
        for entry in gathered:
            try:
                _rebuild(memory, entry, reset=state == "healthy")
            except InputError as error:  # a recovered history an import refuses
                raise InputError(
                    f"thread {entry.repair.thread_id!r}: not rebuilt ({first_line(error)}); "
                    f"its previous files are kept in {kept_in}"
                ) from error
            root = thread_directory(data_dir, entry.repair.thread_id)
            _restore_pending(kept_in / "threads" / root.name, root)
            report.threads.append(entry.repair)
    finally:
        memory.close()
    return report


def _refuse_threads_in_use(data_dir: Path, thread_ids: Sequence[str]) -> None:
    """Refuse, before anything moves, a thread a running ``chat`` or writer holds.

    Repair sets the thread's files aside and writes new ones: a chat session still open on it
    would go on writing the old files (its next line lost to the rebuilt thread). A session
    holds its lock file for as long as it runs, and a writer the thread's writer lock.
    """
    for thread_id in thread_ids:
        root = thread_directory(data_dir, thread_id)
        holders = [*live_sessions(root)] if root.is_dir() else []
        if held_by_another(root / WRITER_LOCK_FILE):
            holders.append(root / WRITER_LOCK_FILE)
        if holders:
            raise ThreadBusyError(
                f"thread {thread_id!r} is in use ({', '.join(str(p) for p in holders)} held by "
                "a running chat or writer): stop it, then run repair again; nothing was changed"
            )


def _restore_pending(old_root: Path, root: Path) -> None:
    """Put the dead chat sessions' files back: the next ``chat`` answers (or shows) their lines.

    Their lines are in the rebuilt thread under the same message ids, so ``chat`` finds them
    as it finds any line a dead session left (``cli.pending_line.judge``).
    """
    for path in sorted(old_root.glob(f"{PREFIX}*")):
        if path.suffix in (".json", ".lock"):
            shutil.copy2(path, root / path.name)


def _rebuild(memory: TopicMemory, entry: _Gathered, *, reset: bool) -> None:
    """Import the gathered messages into a fresh thread (its old checkpoints dropped)."""
    thread_id = entry.repair.thread_id
    if reset:
        memory.checkpointer.delete_thread(thread_id)
    index = memory.services.stores(thread_id).topic_index
    entries = getattr(index, "entries", None)
    if callable(entries):  # the old topic ids are gone with their files
        for topic_id in entries():
            index.remove(topic_id)
    memory.import_messages(thread_id, [to_langchain(m) for m in entry.messages])
    memory.wait_idle(thread_id)
    entry.repair.topics = len(memory.topics(thread_id))


def repair_summary(report: RepairReport) -> list[str]:
    """The report as lines for a person."""
    lines = [f"checkpoint database: {report.database}"]
    for thread in report.threads:
        lines_kept = len(thread.pending_lines)
        pending = f", {lines_kept} pending chat lines" if lines_kept else ""
        lines.append(
            f"thread {thread.thread_id!r}: {thread.recovered} messages recovered "
            f"({thread.from_topic_files} from the topic files, {thread.from_checkpoints} from "
            f"readable checkpoints{pending}) into {thread.topics} topics"
        )
        if not thread.checkpoints_read:
            lines.append(
                "  no checkpoint of it was readable: the messages not yet split into topics "
                "(the newest ones) are gone unless a backup of the checkpoint database has them"
            )
        if thread.checkpoints_unreadable:
            lines.append(
                f"  {thread.checkpoints_unreadable} of its checkpoints were unreadable (damaged "
                f"pages; {thread.checkpoints_read} read): messages only they held are gone"
            )
        if thread.gone:
            shown = ", ".join(thread.gone[:10]) + (" …" if len(thread.gone) > 10 else "")
            lines.append(f"  gone (their text is nowhere): {len(thread.gone)}: {shown}")
        for text in thread.pending_lines:
            lines.append(f"  pending chat line recovered; the next chat answers it: {text[:60]!r}")
    lines.append(f"the previous files are kept in {report.kept_in}")
    return lines
