"""What a failing store means to a person: damaged, read-only, forbidden or full, in one line.

SQLite (the checkpoint database), Chroma (the topic index, itself SQLite plus a Rust core) and
the file system each word these faults their own way; this module tells them apart from the
error they raise where they already fail, so that no turn pays for a check of its own.
"""

from __future__ import annotations

import errno
import shutil
import sqlite3
from pathlib import Path

from langgraph_topics.errors import DamagedStoreError, StoreError, first_line

REPAIR_COMMAND = "langgraph-topics repair"
NEARLY_FULL_BYTES = 1 << 20
"""Free space under which a store's unexplained write failure is taken for a full disk."""

_DAMAGE_MARKERS = (
    "malformed",
    "not a database",
    "file is encrypted",
    "corrupt",
    "database disk image",
)
_DISK_FULL_MARKERS = ("database or disk is full", "no space left")
_READ_ONLY_MARKERS = ("readonly database", "read-only", "unable to open database file")
_PERMISSION_MARKERS = ("permission denied", "access permission denied")


def is_panic(error: BaseException) -> bool:
    """Whether ``error`` is a Rust panic surfacing through PyO3 (Chroma's core).

    ``pyo3_runtime.PanicException`` derives from ``BaseException`` and cannot be imported by
    name, so it is told by its type's name.
    """
    return type(error).__name__ == "PanicException"


def is_damage(error: BaseException) -> bool:
    """Whether ``error`` says that a database file is garbled or cut (not merely unreachable)."""
    if is_panic(error):
        return True
    if isinstance(error, sqlite3.DatabaseError) and getattr(error, "sqlite_errorcode", None) in (
        sqlite3.SQLITE_CORRUPT,
        sqlite3.SQLITE_NOTADB,
    ):
        return True
    text = str(error).lower()
    return any(marker in text for marker in _DAMAGE_MARKERS)


def _reason(error: BaseException) -> str | None:
    """A short cause for a fault that is not damage: disk full, read-only, permission denied."""
    if isinstance(error, OSError):
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            return "disk full"
        if error.errno == errno.EROFS:
            return "read-only file system"
        if error.errno in (errno.EACCES, errno.EPERM):
            return "permission denied"
    text = str(error).lower()
    if any(marker in text for marker in _DISK_FULL_MARKERS):
        return "disk full"
    if any(marker in text for marker in _PERMISSION_MARKERS):
        return "permission denied"
    if any(marker in text for marker in _READ_ONLY_MARKERS):
        return "cannot be opened for writing (a read-only or forbidden data directory?)"
    return None


def checkpoint_fault(error: BaseException, database: Path) -> StoreError:
    """The one-line typed error for ``error`` raised by the checkpoint database ``database``.

    A damaged database names the command that recovers what the thread still holds; any
    other fault says what to change and that nothing was lost (a turn that failed to save
    leaves the previous checkpoint, and a chat line stays pending).
    """
    data_dir = database.parent
    if is_damage(error):
        return DamagedStoreError(
            f"{database}: the checkpoint database is damaged ({first_line(error)}); run "
            f"`{REPAIR_COMMAND} --data-dir {data_dir}` to rebuild it from the topic files, "
            "the readable checkpoints and any pending chat line (the damaged file is kept)",
            str(database),
        )
    reason = _reason(error)
    if reason == "disk full":
        return StoreError(
            f"{database}: disk full; the last change was not saved (a chat line stays pending "
            "and is answered at the next start): free some space and run again",
            str(database),
        )
    shown = reason or first_line(error)
    return StoreError(f"{database}: {shown}", str(database))


def index_fault(error: BaseException, directory: Path) -> StoreError:
    """The one-line typed error for a topic index that cannot be opened or written.

    Chroma words a full disk as a failed compaction; the free space tells it (looked at only
    here, on the way out).
    """
    reason = _reason(error) or first_line(error)
    if reason != "disk full" and nearly_full(directory):
        reason = f"disk full ({first_line(error)})"
    return StoreError(f"{directory}: the topic index: {reason}", str(directory))


def nearly_full(directory: Path) -> bool:
    """Whether the file system holding ``directory`` has less than ``NEARLY_FULL_BYTES`` free."""
    try:
        return shutil.disk_usage(directory).free < NEARLY_FULL_BYTES
    except OSError:
        return False


def file_fault(error: OSError) -> StoreError | None:
    """A typed error for a file-system fault worth naming (full, read-only, forbidden), or None."""
    reason = _reason(error)
    if reason is None:
        return None
    target = error.filename if error.filename is not None else "a data file"
    return StoreError(f"{target}: {reason}", None if error.filename is None else str(target))
