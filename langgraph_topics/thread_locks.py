"""Per-thread locks between processes, and the re-opening of stores another process changed.

Two file locks per thread (``stores.file_lock``: ``filelock``'s, ``flock`` on POSIX), on files
in the thread's directory (``<data-dir>/threads/<thread-dir>/``):

``.lock`` (the writer lock)
    Held by a writer for its whole operation (``chat``, a whole ``import_messages``), so two
    writers of one thread take turns instead of interleaving and losing messages.
``.files.lock`` (the file lock)
    Held while the thread's files are written or read back: by each turn of a writer, and by
    a reader (``context``, ``topics``, ``transcript``, ``check``) while it reads. Opening the
    stores repairs torn lines and brings the message index level with the topics, which must
    not happen halfway through another process's append; and a reader waits for one turn at
    most, never for a whole import.

The JSONL topic store and the message index answer from views loaded when they were opened.
Each time the file lock is taken, the thread's generation marker (``.generation``, see
``stores/thread_generation``: every process replaces it before it first writes the thread's
stores in a hold) is compared with the token this process knew when it last released the lock;
if another process wrote in between, the cached stores are dropped and re-opened from disk.
One small read per hold, whatever the number of topic files. Threads never wait for each other.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Literal, Protocol

from langgraph_topics.errors import ThreadBusyError
from langgraph_topics.services import TopicServices, thread_directory_name
from langgraph_topics.stores.file_lock import FileLock
from langgraph_topics.stores.reentrant_lock import ReentrantLock
from langgraph_topics.stores.thread_generation import begin_hold, end_hold

WRITER_LOCK_FILE = ".lock"
FILES_LOCK_FILE = ".files.lock"

LockKind = Literal["writer", "files"]
LOCK_FILES: dict[LockKind, str] = {"writer": WRITER_LOCK_FILE, "files": FILES_LOCK_FILE}

UNKNOWN_TOKEN = ""
"""What ``_seen`` holds when the marker's token was unknown: never equal to a real token."""


def thread_directory(data_dir: Path, thread_id: str) -> Path:
    """The directory holding a thread's topic files, retrieval index and lock files."""
    return Path(data_dir) / "threads" / thread_directory_name(thread_id)


class ThreadLocking(Protocol):
    """The two locks of every thread, whatever holds them (files here, or advisory locks).

    ``stores.advisory_locks.AdvisoryThreadLocks`` is the ``postgres`` profile's.
    """

    def writer(self, thread_id: str) -> AbstractContextManager[None]:
        """Hold the thread's writer lock (re-entrant; ``ThreadBusyError`` after the timeout)."""
        ...

    def files(self, thread_id: str, timeout: float | None = None) -> AbstractContextManager[None]:
        """Hold the thread's files lock, with stores that show every other writer's writes.

        ``timeout``: seconds to wait for it (None: the locks' own; 0: take it only if free).
        """
        ...

    def close(self) -> None:
        """Let go of what the locks keep open between holds."""
        ...


class ThreadLockPair(ABC):
    """The writer and files locks of every thread, on re-entrant locks shared by processes.

    What differs between the file locks and the advisory locks: where a lock lives
    (``_lock``), and how a process tells that another one wrote the thread since it last held
    the files lock (``_refresh`` when the lock is taken, ``_remember`` when it is let go).

    Args:
        services: Whose cached stores are dropped when another process changed them.
        timeout_seconds: How long to wait for a lock before ``ThreadBusyError``.
    """

    def __init__(self, services: TopicServices, timeout_seconds: float) -> None:
        self.services = services
        self.timeout_seconds = timeout_seconds

    @contextmanager
    def writer(self, thread_id: str) -> Iterator[None]:
        """Hold the thread's writer lock (re-entrant within the holding thread).

        Raises:
            ThreadBusyError: Another writer kept it longer than the timeout.
        """
        with self._hold(thread_id, "writer"):
            yield

    @contextmanager
    def files(self, thread_id: str, timeout: float | None = None) -> Iterator[None]:
        """Hold the thread's files lock, with stores that show every other process's writes.

        ``timeout``: seconds to wait for it (None: ``timeout_seconds``; 0: only if free).

        Raises:
            ThreadBusyError: Another process kept it longer than the timeout.
        """
        with self._hold(thread_id, "files", timeout) as outermost:
            if outermost:
                self._refresh(thread_id)
            try:
                yield
            finally:
                if outermost:
                    self._remember(thread_id)

    @abstractmethod
    def close(self) -> None:
        """Let go of what the locks keep open between holds."""

    @abstractmethod
    def _lock(self, thread_id: str, kind: LockKind) -> ReentrantLock:
        """The thread's lock of ``kind`` (the same object on every call)."""

    @abstractmethod
    def _refresh(self, thread_id: str) -> None:
        """Drop the cached stores if another process wrote since this one last held the lock."""

    @abstractmethod
    def _remember(self, thread_id: str) -> None:
        """Note how the thread's stores look as this process lets go of the files lock."""

    @contextmanager
    def _hold(self, thread_id: str, kind: LockKind, timeout: float | None = None) -> Iterator[bool]:
        """Take one of the thread's locks; yields whether this is the outermost hold."""
        lock = self._lock(thread_id, kind)
        if not lock.acquire(self.timeout_seconds if timeout is None else timeout):
            raise ThreadBusyError(f"thread {thread_id!r} is busy: another process is writing it")
        try:
            yield lock.depth == 1
        finally:
            lock.release()


class ThreadLocks(ThreadLockPair):
    """The writer and file locks of every thread of one memory (see the module docstring).

    Args:
        services: Whose cached stores are dropped when another process changed them.
        timeout_seconds: How long to wait for a lock before ``ThreadBusyError``.
    """

    def __init__(self, services: TopicServices, timeout_seconds: float) -> None:
        super().__init__(services, timeout_seconds)
        self._locks: dict[Path, FileLock] = {}
        self._held: dict[tuple[str, LockKind], FileLock] = {}
        """``_locks`` by thread and kind: a turn takes them four times, paths cost more."""
        self._directories: dict[str, Path] = {}
        self._seen: dict[str, str] = {}
        """The marker's token when this process last released each thread's file lock."""
        self._mutex = threading.Lock()

    def directory(self, thread_id: str) -> Path:
        """The thread's directory (where its lock files are)."""
        found = self._directories.get(thread_id)
        if found is None:
            found = thread_directory(self.services.settings.data_dir, thread_id)
            self._directories[thread_id] = found
        return found

    def close(self) -> None:
        """Nothing to close: a lock file is opened for each hold only."""

    def _refresh(self, thread_id: str) -> None:
        """Drop the cached stores if another process wrote since this one last held the lock.

        Stores opened without the lock (no token was noted yet) are trusted as they are.
        """
        directory = self.directory(thread_id)
        token = begin_hold(directory)
        try:
            seen = self._seen.get(thread_id)
            if seen is not None and (token is None or token != seen):
                self.services.forget_stores(thread_id)
        except BaseException:
            end_hold(directory)
            raise

    def _remember(self, thread_id: str) -> None:
        self._seen[thread_id] = end_hold(self.directory(thread_id)) or UNKNOWN_TOKEN

    def _lock(self, thread_id: str, kind: LockKind) -> FileLock:
        found = self._held.get((thread_id, kind))
        if found is not None:
            return found
        path = self.directory(thread_id) / LOCK_FILES[kind]
        with self._mutex:
            if path not in self._locks:
                self._locks[path] = FileLock(path)
            self._held[(thread_id, kind)] = self._locks[path]
            return self._locks[path]
