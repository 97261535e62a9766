"""Durable appends: bytes that reach the disk whole, or not at all.

Every store of this package is append-only (topic files, links, the retrieval index), so one
crash-safe append serves them all.

Each helper first replaces the generation marker of the thread directory it writes under
(``thread_generation``), so that other processes re-open their cached stores; files that no
store caches (``cached=False``) leave it alone.
"""

from __future__ import annotations

import os
from pathlib import Path

from langgraph_topics.stores.scratch_files import scratch_path
from langgraph_topics.stores.thread_generation import note_write


def fsync_directory(path: Path) -> None:
    """Make a new directory entry durable (a new file is not, until its directory is synced)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some filesystems refuse fsync on directories
        pass
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data``: ``os.write`` may take fewer (a signal, a nearly full disk).

    The one place the stores' bytes go through, so a full disk is met (and tested) here.
    """
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def append_durably(path: Path, data: bytes) -> None:
    """Append complete lines durably, or leave the file exactly as it was.

    On a failed write or flush (disk full…) the bytes that did land are cut off again: left
    in place, they would glue themselves onto the next append and corrupt a line that is not
    the last one, or hold a record that a retry then appends a second time. A file the append
    created is removed again (an empty topic file would be warned about on every open).

    Raises:
        OSError: Naming ``path`` (``os.write`` alone names no file, and the one line a person
            reads should say which file the full disk refused).
    """
    note_write(path)
    created = False
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    except FileNotFoundError:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
        created = True
    try:
        start = os.fstat(fd).st_size
        try:
            _write_all(fd, data)
            os.fsync(fd)
        except BaseException as error:
            _undo_append(path, fd, start, created=created)
            if isinstance(error, OSError) and error.filename is None:
                raise _naming(error, path) from error
            raise
    finally:
        os.close(fd)


def _undo_append(path: Path, fd: int, start: int, *, created: bool) -> None:
    """Take back what a failed append wrote; a failure here leaves a torn tail, cut on open."""
    try:
        if created:
            os.unlink(path)
        else:
            os.ftruncate(fd, start)
    except OSError:
        pass


def _naming(error: OSError, path: Path) -> OSError:
    """The same error naming ``path`` (``OSError`` picks the subclass its errno maps to)."""
    return OSError(error.errno, error.strerror, str(path))


def replace_durably(path: Path, data: bytes, *, cached: bool = True) -> None:
    """Replace a small file whole.

    A reader, or the next process after a crash, finds the old content or the new one, never
    a mix. A failed write leaves no scratch file; a killed one may (``scratch_files`` sweeps
    those). ``cached=False``: no store caches the file (the CLI's pending line), so other
    processes need not re-open anything.
    """
    if cached:
        note_write(path)
    scratch = scratch_path(path)
    try:
        fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(scratch, path)
    except BaseException as error:
        # A full disk would otherwise keep the partial copy too (the file itself is intact).
        scratch.unlink(missing_ok=True)
        if isinstance(error, OSError) and error.filename is None:
            raise _naming(error, path) from error
        raise
    fsync_directory(path.parent)


def truncate_durably(path: Path, size: int) -> None:
    """Cut a file back to ``size`` bytes (a torn or uncommitted tail) and flush it to disk."""
    note_write(path)
    with path.open("r+b") as handle:
        handle.truncate(size)
        handle.flush()
        os.fsync(handle.fileno())


def remove_file(path: Path) -> None:
    """Delete a file if it is there (a store rebuilt from scratch, an entry taken back)."""
    note_write(path)
    path.unlink(missing_ok=True)
