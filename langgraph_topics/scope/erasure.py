"""Deleted means gone from the files too: SQLite keeps deleted rows in free pages and its WAL.

A ``DELETE`` in SQLite only unlinks the rows: their bytes stay in the database's free pages
and in the write-ahead log until those are reused. Forgetting a user therefore deletes their
checkpoints with ``secure_delete`` on (SQLite overwrites what it deletes with zeros) and then
checkpoints the WAL with ``TRUNCATE`` (the log, which still holds every earlier version of the
rows, is emptied); the local topic index's database, which Chroma owns, is vacuumed after its
collections are dropped. ``residue`` then looks for the user's key in the raw bytes of those
files, so that ``check`` proves nothing is left rather than assuming it.

A process reading the checkpoint database at that moment can keep the WAL from being
truncated; the residue check then names the file, and running ``forget`` again finishes it.
The ``postgres`` profile's deleted row versions go at the table's next ``VACUUM`` (autovacuum);
what any query can read is gone at once.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_topics.errors import first_line
from langgraph_topics.stores.data_layout import checkpoint_database, index_directory

log = logging.getLogger(__name__)

CHUNK = 1 << 20
INDEX_DATABASE = "chroma.sqlite3"


@contextmanager
def erasing(saver: Any) -> Iterator[None]:
    """Delete checkpoints inside this block so that their bytes are overwritten, then flushed.

    A saver other than the embedded SQLite one is left as it is.
    """
    if not isinstance(saver, SqliteSaver):
        yield
        return
    with saver.cursor(transaction=False) as cursor:
        cursor.execute("PRAGMA secure_delete=ON")
    try:
        yield
    finally:
        with saver.cursor(transaction=False) as cursor:
            cursor.execute("PRAGMA secure_delete=OFF")
            busy = cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy and busy[0]:
            log.warning("the checkpoint log is in use by another process: run forget again")


def vacuum_index(data_dir: Path) -> None:
    """Rewrite the local topic index's database without the free pages a drop left (if any)."""
    path = index_directory(data_dir) / INDEX_DATABASE
    if not path.is_file():
        return
    try:
        connection = sqlite3.connect(path, timeout=30, isolation_level=None)
        try:
            connection.execute("VACUUM")
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            connection.close()
    except sqlite3.Error as error:  # busy: another process holds it; residue names the file
        log.warning("%s: not vacuumed (%s): run forget again", path, first_line(error))


def residue(data_dir: Path, needle: str) -> list[Path]:
    """The SQLite files under ``data_dir`` whose raw bytes still hold ``needle``."""
    data_dir = Path(data_dir)
    found: list[Path] = []
    for base in (checkpoint_database(data_dir), index_directory(data_dir) / INDEX_DATABASE):
        for path in (base, base.with_name(base.name + "-wal")):
            if path.is_file() and _holds(path, needle.encode("utf-8")):
                found.append(path)
    return found


def _holds(path: Path, needle: bytes) -> bool:
    """Whether ``needle`` is in the file, read a chunk at a time (it may be large)."""
    tail = b""
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            if needle in tail + chunk:
                return True
            tail = chunk[-len(needle) :]
    return False
