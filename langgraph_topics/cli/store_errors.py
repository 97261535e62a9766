"""Store faults that reach the command line untyped, named as one line.

The memory types the faults it meets where the stores open and where the checkpoint database
is read or written (``StoreError``); a few paths still raise the engine's own error (a pruning
statement, a Chroma request mid-turn, a Rust panic in Chroma's core). This gives each the same
one line, naming the file, that the typed errors carry.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from langgraph_topics.errors import StoreError
from langgraph_topics.stores.data_layout import checkpoint_database, index_directory
from langgraph_topics.stores.store_faults import (
    checkpoint_fault,
    file_fault,
    index_fault,
    is_panic,
)


def _from_chroma(error: BaseException) -> bool:
    module = type(error).__module__ or ""
    return module.startswith("chromadb") or is_panic(error)


def store_fault_of(error: BaseException, data_dir: Path | None) -> StoreError | None:
    """``error`` as a one-line ``StoreError`` when it is a store's fault, else None.

    Args:
        error: What the command raised.
        data_dir: The command's ``--data-dir`` (None: a command without one).
    """
    if isinstance(error, StoreError):
        return error
    if isinstance(error, OSError):
        return file_fault(error)
    if data_dir is None:
        return None
    if isinstance(error, sqlite3.Error):
        return checkpoint_fault(error, checkpoint_database(data_dir))
    if _from_chroma(error):
        return index_fault(error, index_directory(data_dir))
    return None
