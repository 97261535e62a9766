"""SQLite checkpointer for the graph state (one database file per deployment or thread)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_topics.stores.checkpoint_compression import compressed_serializer
from langgraph_topics.stores.store_faults import checkpoint_fault


class NamedFaultSqliteSaver(SqliteSaver):
    """A ``SqliteSaver`` whose database faults are typed errors naming the file.

    A damaged page, a full disk or a read-only file shows where a read or write already
    fails (no check of its own on a turn's path): ``DamagedStoreError`` for damage (pointing
    at ``langgraph-topics repair``), ``StoreError`` for the rest.
    """

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        super().__init__(conn, serde=compressed_serializer())
        self.path = Path(path)

    @contextmanager
    def cursor(self, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
        """The saver's cursor; a SQLite error under it becomes the typed error naming the file."""
        try:
            with super().cursor(transaction) as cursor:
                yield cursor
        except sqlite3.Error as error:
            raise checkpoint_fault(error, self.path) from error


def open_sqlite_checkpointer(path: Path) -> SqliteSaver:
    """Open (or create) a SQLite checkpoint database, ready for a graph running nodes in threads.

    The connection is shared across threads (``check_same_thread=False``): the saver serialises
    access with its own lock. WAL lets readers (Studio, the CLI) look at checkpoints while a run
    writes them. Checkpoints are stored zstd-compressed (``checkpoint_compression``); rows of
    an older database, stored plain, load as they are. The caller owns the connection: close it
    with ``saver.conn.close()``.

    Args:
        path: Database file; parent directories are created.

    Returns:
        A set-up :class:`SqliteSaver`.

    Raises:
        DamagedStoreError: The file is not a readable database (garbled, cut short).
        StoreError: It cannot be opened or set up: a read-only or forbidden directory, a full
            disk (one line naming the file).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(str(path), check_same_thread=False)
    except sqlite3.Error as error:
        raise checkpoint_fault(error, path) from error
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        saver = NamedFaultSqliteSaver(conn, path)
        # Creating the tables now surfaces a bad path or a locked file here, not mid-turn.
        saver.setup()
    except sqlite3.Error as error:
        conn.close()
        raise checkpoint_fault(error, path) from error
    except BaseException:
        conn.close()
        raise
    return saver
