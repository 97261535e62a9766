"""``langgraph-topics threads``: the threads of a data directory, read without writing.

A thread's id is recorded only in the checkpoint database (its folder is named by a hash of
it), so the list comes from there: each thread's newest checkpoint gives the messages it has
counted, its topics and when it was last written. The embedded database is opened read-only
(listing creates nothing and waits for no writer); the ``postgres`` profile's through its saver.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sqlite3
from collections.abc import Callable, Iterable
from contextlib import closing
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langgraph_topics.cli.existing_data import require_data_dir
from langgraph_topics.cli.known_threads import read_only_database
from langgraph_topics.cli.tables import render_table
from langgraph_topics.errors import first_line
from langgraph_topics.settings import STORE_ENV
from langgraph_topics.stores.data_layout import checkpoint_database
from langgraph_topics.thread_ids import scoped_parts

log = logging.getLogger(__name__)

THREAD_IDS = "SELECT DISTINCT thread_id FROM checkpoints WHERE checkpoint_ns = ''"


@dataclass(frozen=True)
class ThreadRow:
    """One thread as ``threads`` shows it (None: its newest checkpoint could not be read)."""

    thread: str
    messages: int | None
    """Messages the thread holds (every message ever added: working set and topics)."""
    topics: int | None
    active_topics: int | None
    last_activity: str | None
    """When its newest checkpoint was written (ISO-8601, UTC)."""


def thread_row(thread_id: str, newest: Any) -> ThreadRow:
    """A thread's row from its newest ``CheckpointTuple`` (None: it has none)."""
    if newest is None:
        return ThreadRow(thread_id, None, None, None, None)
    checkpoint = newest.checkpoint
    values = checkpoint.get("channel_values", {})
    registry = values.get("topics") or {}
    counted = values.get("total_messages")
    return ThreadRow(
        thread=thread_id,
        messages=int(counted) if counted is not None else len(values.get("messages", [])),
        topics=len(registry),
        active_topics=sum(1 for t in registry.values() if t.get("status") == "active"),
        last_activity=checkpoint.get("ts"),
    )


def _rows(thread_ids: Iterable[str], newest_of: Callable[[str], Any]) -> list[ThreadRow]:
    rows = []
    for thread_id in sorted(thread_ids):
        try:
            newest = newest_of(thread_id)
        except Exception as error:  # one damaged row: the others are still listed
            log.warning("thread %r: newest checkpoint unreadable: %s", thread_id, first_line(error))
            newest = None
        rows.append(thread_row(thread_id, newest))
    return rows


def _config(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def embedded_threads(data_dir: Path) -> list[ThreadRow]:
    """The threads of an embedded data directory (none when it has no checkpoint database).

    Raises:
        InputError: ``data_dir`` is not a directory.
        StoreError: The database cannot be read (a damaged one names ``repair``).
    """
    from langgraph_topics.stores.checkpointer import NamedFaultSqliteSaver
    from langgraph_topics.stores.store_faults import checkpoint_fault

    require_data_dir(data_dir)
    database = checkpoint_database(data_dir)
    if not database.is_file():
        return []
    try:
        connection = read_only_database(database)
    except sqlite3.Error as error:
        raise checkpoint_fault(error, database) from error
    with closing(connection):
        try:
            thread_ids = [str(row[0]) for row in connection.execute(THREAD_IDS)]
        except sqlite3.Error as error:
            raise checkpoint_fault(error, database) from error
        saver = NamedFaultSqliteSaver(connection, database)
        saver.is_setup = True  # read-only: its tables are there, or listing failed above
        return _rows(thread_ids, lambda thread_id: saver.get_tuple(_config(thread_id)))


def database_threads(memory: Any) -> list[ThreadRow]:
    """The threads of the ``postgres`` profile's database (``memory`` opened on it)."""
    from langgraph_topics.stores.postgres_profile import saver_connection

    saver = memory.checkpointer
    with saver_connection(saver) as connection:
        found = connection.execute(THREAD_IDS).fetchall()
    thread_ids = [str(row["thread_id"] if isinstance(row, dict) else row[0]) for row in found]
    return _rows(thread_ids, lambda thread_id: saver.get_tuple(_config(thread_id)))


def _when(stamp: str | None) -> str:
    """A checkpoint time as ``YYYY-MM-DD HH:MM:SS`` UTC ('-' when unknown)."""
    if not stamp:
        return "-"
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _shown(value: int | None) -> object:
    return "?" if value is None else value


def shown_thread(thread_id: str) -> str:
    """A thread id for the table: a user's thread as ``<thread> (user <user key>)``."""
    parts = scoped_parts(thread_id)
    return thread_id if parts is None else f"{parts[1]} (user {parts[0]})"


def run_threads(args: argparse.Namespace, open_memory: Callable[..., Any]) -> int:
    """List the threads as a table (``--json``: a list of objects); returns 0."""
    if os.environ.get(STORE_ENV, "").strip().lower() == "postgres":
        rows = database_threads(open_memory(args))
        where = "the database"
    else:
        rows = embedded_threads(args.data_dir)
        where = str(args.data_dir)
    if args.json:
        print(json.dumps([asdict(row) for row in rows], ensure_ascii=False, indent=2))
        return 0
    if not rows:
        print(f"no threads in {where}")
        return 0
    table = [
        [
            shown_thread(row.thread),
            _shown(row.messages),
            _shown(row.topics),
            _shown(row.active_topics),
            _when(row.last_activity) + (" UTC" if row.last_activity else ""),
        ]
        for row in rows
    ]
    print(render_table(["thread", "messages", "topics", "active", "last activity"], table))
    return 0
