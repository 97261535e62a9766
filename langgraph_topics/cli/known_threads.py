"""Whether a data directory holds a thread, looked up without creating or locking anything.

Opening a memory and reading a thread under its lock creates the thread's directory (lock
files, an empty ``topics/``), so a mistyped ``--thread`` on ``topics`` or ``context`` used to
leave a folder behind and print an empty table. The commands that read or amend a thread ask
here first: a thread exists when the checkpoint database has a row for it (read-only), or when
its directory holds anything besides what an earlier read's locks left there.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path

from langgraph_topics.stores.data_layout import checkpoint_database
from langgraph_topics.thread_ids import thread_directory_name

THREADS_DIR = "threads"
LOCK_LEFTOVERS = frozenset({".lock", ".files.lock", ".generation", ".order"})
"""Files a read leaves in a thread's directory (the locks and their generation marker):
they do not make a thread, so a folder an earlier version's read created stays unknown."""
QUEUE_SUFFIX = ".queue"
"""A lock's queue of waiters (``stores/lock_queue``): only lock tickets, never thread data."""


def read_only_database(database: Path) -> sqlite3.Connection:
    """A connection that cannot change ``database``, nor create files beside it.

    A database in WAL mode keeps its ``-wal`` (and ``-shm``) file while a connection is open:
    then the read goes through the log (the newest checkpoints may be there only). Without
    one no writer is connected, and the main file is read as it is (``immutable``), since a
    read-only connection would create the ``-shm`` and ``-wal`` files itself.

    Raises:
        sqlite3.Error: The file cannot be read as a database.
    """
    base = database.resolve().as_uri()
    if not Path(f"{database}-wal").exists():
        return sqlite3.connect(f"{base}?mode=ro&immutable=1", uri=True, check_same_thread=False)
    connection = sqlite3.connect(f"{base}?mode=ro", uri=True, check_same_thread=False)
    try:
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error:  # no shared-memory file can be made: the main file alone
        connection.close()
        connection = sqlite3.connect(f"{base}?mode=ro&immutable=1", uri=True)
    return connection


def thread_in_database(database: Path, thread_id: str) -> bool | None:
    """Whether the checkpoint database has a checkpoint of ``thread_id`` (None: unreadable)."""
    if not database.is_file():
        return False
    try:
        with closing(read_only_database(database)) as connection:
            row = connection.execute(
                "SELECT 1 FROM checkpoints WHERE thread_id = ? LIMIT 1", (thread_id,)
            ).fetchone()
    except sqlite3.Error:  # damaged, or no table: the memory names the fault when it opens
        return None
    return row is not None


def holds_thread_data(directory: Path) -> bool:
    """Whether a thread's directory holds a file besides lock leftovers (empty folders aside)."""
    for _, folders, files in os.walk(directory):
        folders[:] = [name for name in folders if not name.endswith(QUEUE_SUFFIX)]
        if any(name not in LOCK_LEFTOVERS for name in files):
            return True
    return False


def thread_on_disk(data_dir: Path, thread_id: str) -> bool | None:
    """Whether the embedded data directory ``data_dir`` holds ``thread_id``.

    Returns:
        True or False; None when it cannot be told from here (the checkpoint database is
        unreadable: opening the memory reports why).
    """
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        return False
    directory = data_dir / THREADS_DIR / thread_directory_name(thread_id)
    if directory.is_dir() and holds_thread_data(directory):
        return True  # topic files without checkpoints: the memory names the lost database
    return thread_in_database(checkpoint_database(data_dir), thread_id)
