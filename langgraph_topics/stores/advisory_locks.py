"""Per-thread locks of the ``postgres`` profile: PostgreSQL session-level advisory locks.

The same two locks per thread as the embedded file locks (``thread_locks``), with the same
meaning, but held in the shared database so that workers on different machines exclude each
other: the writer lock for a writer's whole operation, the files lock while the thread's
stores are written or read back.

A session-level advisory lock belongs to the connection that took it, so each held lock keeps
a connection of its own (never one of the pool's, which other threads reuse). When the holding
process dies, its connections close and the server frees its locks: a killed worker never
leaves a thread locked. Taking a held lock waits in the server (``pg_advisory_lock`` under a
``lock_timeout`` of the time left): the server grants a lock to its waiters in the order they
asked, so waiting writers are served in turn (polling ``pg_try_advisory_lock`` was not fair: a
worker that let go and asked again at once could take the lock over and over).

Refresh: a worker's stores answer from views loaded when they were opened. Where the file locks
compare the thread directory's generation marker, these compare the shared topic store's
high-water sequence number (``head``) with what this process saw when it last released the
files lock; if another worker wrote in between, the cached stores are dropped and re-opened.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from langgraph_topics.stores.postgres_profile import advisory_key, unreachable
from langgraph_topics.stores.reentrant_lock import ReentrantLock
from langgraph_topics.thread_locks import LockKind, ThreadLockPair

if TYPE_CHECKING:
    import psycopg

    from langgraph_topics.services import TopicServices

log = logging.getLogger(__name__)

UNKNOWN_HEAD = -1
"""What ``_seen`` holds when the head could not be read: never equal to a real head."""
IDLE_CONNECTIONS = 4
"""Lock connections kept open between holds (a turn takes two locks)."""


class LockConnections:
    """Connections for advisory locks, one per held lock, reused between holds."""

    def __init__(self, uri: str, connect_timeout: float = 10.0) -> None:
        self.uri = uri
        self.connect_timeout = connect_timeout
        self._idle: list[psycopg.Connection[Any]] = []
        self._mutex = threading.Lock()

    def take(self, *, fresh: bool = False) -> psycopg.Connection[Any]:
        """A connection of its own: an idle one, or a new one (always when ``fresh``).

        Raises:
            StoreUnavailableError: The database cannot be reached.
        """
        import psycopg

        while not fresh:
            with self._mutex:
                connection = self._idle.pop() if self._idle else None
            if connection is None:
                break
            if not connection.closed and not connection.broken:
                return connection
        try:
            return psycopg.connect(
                self.uri, autocommit=True, connect_timeout=max(1, int(self.connect_timeout))
            )
        except psycopg.Error as error:
            raise unreachable(self.uri, error) from None

    def give_back(self, connection: psycopg.Connection[Any]) -> None:
        """Keep a connection that holds no lock for the next hold (or close it)."""
        with self._mutex:
            if len(self._idle) < IDLE_CONNECTIONS and not connection.closed:
                self._idle.append(connection)
                return
        connection.close()

    def close(self) -> None:
        """Close the idle connections (held locks keep theirs until released)."""
        with self._mutex:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()


class AdvisoryLock(ReentrantLock):
    """A re-entrant lock shared by processes and threads: one advisory lock key.

    The re-entrant front (``reentrant_lock``) lets the holding thread take it again and queues
    the process's other threads in order, so that each process waits in the server once.

    ``acquire`` raises ``StoreUnavailableError`` when the database cannot be reached.
    """

    def __init__(self, key: int, connections: LockConnections) -> None:
        super().__init__()
        self.key = key
        self.connections = connections
        self._connection: psycopg.Connection[Any] | None = None

    def _take_shared(self, deadline: float) -> bool:
        import psycopg

        connection: psycopg.Connection[Any] | None = None
        try:
            connection, taken = self._first_try()
            taken = taken or self._wait(connection, deadline)
        except BaseException as error:
            if connection is not None:
                connection.close()  # closing the session frees the lock if it was taken
            if isinstance(error, psycopg.OperationalError):
                raise unreachable(self.connections.uri, error) from None
            raise
        if not taken:
            self.connections.give_back(connection)
            return False
        self._connection = connection
        return True

    def _first_try(self) -> tuple[psycopg.Connection[Any], bool]:
        """A connection and whether it took the lock at once.

        An idle connection the server dropped meanwhile (a restart) is replaced, once.
        """
        import psycopg

        connection = self.connections.take()
        try:
            return connection, self._try(connection)
        except psycopg.OperationalError:
            connection.close()
        connection = self.connections.take(fresh=True)
        try:
            return connection, self._try(connection)
        except BaseException:
            connection.close()
            raise

    def _try(self, connection: psycopg.Connection[Any]) -> bool:
        row = connection.execute("SELECT pg_try_advisory_lock(%s)", (self.key,)).fetchone()
        return bool(row and row[0])

    def _wait(self, connection: psycopg.Connection[Any], deadline: float) -> bool:
        """Wait in the server's queue for the lock until ``deadline``; whether it was taken."""
        import psycopg

        left_ms = int((deadline - time.monotonic()) * 1000)
        if left_ms < 1:  # lock_timeout 0 would wait for ever
            return False
        connection.execute("SELECT set_config('lock_timeout', %s, false)", (f"{left_ms}ms",))
        try:
            connection.execute("SELECT pg_advisory_lock(%s)", (self.key,))
        except psycopg.errors.LockNotAvailable:
            return False
        finally:
            # The connection serves other keys later, which wait no longer than they ask.
            connection.execute("RESET lock_timeout")
        return True

    def _release_shared(self) -> None:
        if self._connection is None:
            return
        connection, self._connection = self._connection, None
        try:
            connection.execute("SELECT pg_advisory_unlock(%s)", (self.key,))
        except Exception:
            connection.close()  # the session ends, and the lock with it
        else:
            self.connections.give_back(connection)


class AdvisoryThreadLocks(ThreadLockPair):
    """The writer and files locks of every thread, as advisory locks (see the module docstring).

    Args:
        services: Whose cached stores are dropped when another worker wrote the thread.
        timeout_seconds: How long to wait for a lock before ``ThreadBusyError``.
        uri: The database the locks are taken in (the profile's).
        head_of: The shared topic store's high-water sequence number of a thread.
    """

    def __init__(
        self,
        services: TopicServices,
        timeout_seconds: float,
        uri: str,
        head_of: Callable[[str], int],
    ) -> None:
        super().__init__(services, timeout_seconds)
        self.head_of = head_of
        self.connections = LockConnections(uri)
        self._locks: dict[tuple[str, str], AdvisoryLock] = {}
        self._seen: dict[str, int] = {}
        """The store's head when this process last released each thread's files lock."""
        self._mutex = threading.Lock()

    def close(self) -> None:
        """Close the idle lock connections."""
        self.connections.close()

    def _remember(self, thread_id: str) -> None:
        try:
            self._seen[thread_id] = self.head_of(thread_id)
        except Exception:  # unknown: the next hold re-opens the stores (and reports the error)
            log.warning("thread %s: could not read the topic store's head", thread_id)
            self._seen[thread_id] = UNKNOWN_HEAD

    def _refresh(self, thread_id: str) -> None:
        """Drop the cached stores if another worker wrote since this one last held the lock."""
        seen = self._seen.get(thread_id)
        if seen is not None and seen != self.head_of(thread_id):
            self.services.forget_stores(thread_id)

    def _lock(self, thread_id: str, kind: LockKind) -> AdvisoryLock:
        with self._mutex:
            lock = self._locks.get((thread_id, kind))
            if lock is None:
                key = advisory_key(f"langgraph-topics:{kind}:{thread_id}")
                lock = self._locks[(thread_id, kind)] = AdvisoryLock(key, self.connections)
            return lock
