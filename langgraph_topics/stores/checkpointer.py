"""SQLite checkpointer for the graph state (one database file per deployment or thread)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_topics.stores.checkpoint_compression import compressed_serializer


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
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        saver = SqliteSaver(conn, serde=compressed_serializer())
        # Creating the tables now surfaces a bad path or a locked file here, not mid-turn.
        saver.setup()
    except BaseException:
        conn.close()
        raise
    return saver
