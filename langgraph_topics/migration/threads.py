"""The threads of an embedded data directory, read without changing anything in it.

A thread's id is recorded only in the checkpoint database (its topic directory is named by a
hash of it, ``services.thread_directory_name``), so the ``checkpoints`` table lists them.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from langgraph_topics.errors import InputError
from langgraph_topics.stores.data_layout import CHECKPOINT_DATABASE


def checkpoint_database(data_dir: Path) -> Path:
    """The checkpoint database of an embedded data directory.

    Raises:
        InputError: ``data_dir`` is not a directory, or holds no checkpoint database.
    """
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise InputError(f"{data_dir}: no such data directory")
    database = data_dir / CHECKPOINT_DATABASE
    if not database.is_file():
        raise InputError(
            f"{data_dir}: not an embedded data directory (no {CHECKPOINT_DATABASE} in it)"
        )
    return database


def list_threads(data_dir: Path) -> list[str]:
    """The ids of every thread with a checkpoint in ``data_dir``, sorted.

    The database is opened read-only: listing creates no file and takes no write lock.

    Raises:
        InputError: Not an embedded data directory, or its database cannot be read.
    """
    database = checkpoint_database(data_dir)
    try:
        with closing(sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)) as db:
            rows = db.execute("SELECT DISTINCT thread_id FROM checkpoints").fetchall()
    except sqlite3.Error as error:
        raise InputError(f"{database}: cannot read the checkpoint database ({error})") from None
    return sorted(str(thread_id) for (thread_id,) in rows)
