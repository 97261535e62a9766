"""What a damaged (or healthy) checkpoint database still yields, read without writing to it.

``repair`` needs every message the readable checkpoints hold: a checkpoint's working set (the
unsplit messages and the last ones) and its pending writes (a turn's saved input). Each thread
is read on its own and stops at its first unreadable row, keeping what came before it, so a
half-cut file still gives its intact pages and a garbled header gives nothing, quietly.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from langgraph_topics.errors import StoreError, first_line
from langgraph_topics.state.messages import to_stored
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.checkpointer import NamedFaultSqliteSaver
from langgraph_topics.stores.store_faults import is_damage

log = logging.getLogger(__name__)

DatabaseState = Literal["healthy", "damaged", "missing"]


@dataclass
class SalvagedThread:
    """The messages the readable checkpoints of one thread hold, oldest checkpoint first."""

    messages: dict[str, StoredMessage] = field(default_factory=dict)
    """By id, in the order they were first seen (oldest checkpoint first)."""
    checkpoints: int = 0
    """How many checkpoints were read."""
    unreadable: int = 0
    """Checkpoints listed but unreadable (on a damaged page)."""
    stopped_at: str | None = None
    """The last error met while reading, one line (None: every row was read)."""


def _read_only(database: Path) -> sqlite3.Connection:
    """A connection that cannot change ``database``.

    Read-only with its write-ahead log first (the newest checkpoints may still be there);
    where that cannot open (no shared-memory file can be made), the main file alone.
    """
    base = database.resolve().as_uri()
    connection = sqlite3.connect(f"{base}?mode=ro", uri=True, check_same_thread=False)
    try:
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as error:
        connection.close()
        if is_damage(error):
            raise
        connection = sqlite3.connect(f"{base}?mode=ro&immutable=1", uri=True)
    return connection


def _messages_of(values: Iterable[Any]) -> Iterable[BaseMessage]:
    for value in values:
        if isinstance(value, BaseMessage):
            yield value
        elif isinstance(value, list | tuple):
            yield from _messages_of(value)


def database_state(database: Path) -> DatabaseState:
    """Whether the checkpoint database is there and passes SQLite's own quick check.

    Repair is run by hand, so a full read of the file is affordable here (never on a turn).
    """
    if not database.is_file():
        return "missing"
    try:
        uri = f"{database.resolve().as_uri()}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True)) as connection:
            verdict = connection.execute("PRAGMA quick_check").fetchone()
    except sqlite3.Error as error:
        return "damaged" if is_damage(error) else "healthy"
    return "healthy" if verdict and verdict[0] == "ok" else "damaged"


def salvage_thread_ids(database: Path) -> list[str]:
    """The thread ids the database still lists (none when its table cannot be read)."""
    if not database.is_file():
        return []
    try:
        with closing(_read_only(database)) as connection:
            rows = connection.execute("SELECT DISTINCT thread_id FROM checkpoints").fetchall()
    except sqlite3.Error as error:
        log.debug("%s: thread ids unreadable: %s", database, first_line(error))
        return []
    return sorted(str(thread_id) for (thread_id,) in rows)


def salvage_thread(database: Path, thread_id: str) -> SalvagedThread:
    """Every message of ``thread_id`` its readable checkpoints (and pending writes) hold.

    The checkpoint ids come from the table's key (an index, often intact when data pages are
    not); each checkpoint is then read on its own, so a damaged page costs only the rows on it.
    """
    salvaged = SalvagedThread()
    if not database.is_file():
        return salvaged
    newest_first: list[list[BaseMessage]] = []
    try:
        with closing(_read_only(database)) as connection:
            saver = NamedFaultSqliteSaver(connection, database)
            saver.is_setup = True  # a read-only file: its tables are there or it is unreadable
            rows = connection.execute(
                "SELECT checkpoint_ns, checkpoint_id FROM checkpoints WHERE thread_id = ?",
                (thread_id,),
            ).fetchall()
            for namespace, checkpoint_id in sorted(rows, key=lambda row: row[1], reverse=True):
                config = {
                    "configurable": {
                        "thread_id": thread_id,
                        "checkpoint_ns": namespace,
                        "checkpoint_id": checkpoint_id,
                    }
                }
                try:
                    checkpoint = saver.get_tuple(cast(RunnableConfig, config))
                except Exception as error:  # a damaged page, or a blob that no longer decodes
                    log.debug("%s: checkpoint %s unreadable", database, checkpoint_id)
                    salvaged.unreadable += 1
                    salvaged.stopped_at = first_line(error)
                    continue
                if checkpoint is None:
                    continue
                values = checkpoint.checkpoint.get("channel_values", {})
                found = list(_messages_of([values.get("messages", [])]))
                writes = checkpoint.pending_writes or []
                saved = (value for _, channel, value in writes if channel == "messages")
                found += _messages_of(saved)
                newest_first.append(found)
                salvaged.checkpoints += 1
    except (StoreError, sqlite3.Error, ValueError, TypeError) as error:
        salvaged.stopped_at = first_line(error)
    # A message's newest text wins (a fork may have replaced it); its place is where it
    # first appeared.
    newest: dict[str, StoredMessage] = {}
    for found in newest_first:
        for message in found:
            if message.id and message.id not in newest:
                newest[message.id] = to_stored(message)
    for found in reversed(newest_first):
        for message in found:
            if message.id and message.id not in salvaged.messages:
                salvaged.messages[message.id] = newest[message.id]
    return salvaged
