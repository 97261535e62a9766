"""An exclusive lock shared by processes and threads: a lock on a file, taken in turn.

The lock is ``filelock``'s descriptor lock (``stores.fd_locks``: ``flock`` on POSIX,
``LockFileEx`` on Windows), which excludes other open files, so other processes and other
threads of this one (each acquisition opens the file anew) alike. The re-entrant front
(``reentrant_lock``) lets the thread that holds the lock take it again and queues the
process's other threads in order; on POSIX the queue of ``lock_queue`` orders the processes,
so waiting writers are served in the order they came instead of whoever polls at the right
moment. Elsewhere (Windows) the processes poll the lock without that queue: exclusion holds,
the order between processes is not guaranteed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from langgraph_topics.stores.fd_locks import try_lock, unlock
from langgraph_topics.stores.lock_queue import QUEUE_SUPPORTED, LockQueue, Ticket
from langgraph_topics.stores.reentrant_lock import ReentrantLock

QUEUE_POLL_SECONDS = 0.01
"""How often a queued waiter looks whether its turn came: a hand-over waits this long at
most, and a look is a directory listing and a lock attempt on the waiter ahead."""


class FileLock(ReentrantLock):
    """A re-entrant, inter-process exclusive lock on ``path`` (created when missing).

    The lock file and its queue directory are never deleted: removing the file while another
    process waits on it would let two processes hold "the" lock on two different files.

    Args:
        path: The lock file.
        queued: Whether waiters queue in the order they came (POSIX only; the default there).
    """

    def __init__(self, path: Path, *, queued: bool = QUEUE_SUPPORTED) -> None:
        super().__init__()
        self.path = Path(path)
        self.queue = LockQueue(self.path) if queued else None
        self._fd: int | None = None
        self._ticket: Ticket | None = None

    def _take_shared(self, deadline: float) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        ticket = self.queue.join() if self.queue is not None else None
        fd: int | None = None
        try:
            while True:
                if self.queue is None or ticket is None or self.queue.first(ticket):
                    # The lock itself is free once the waiters ahead left (a process of an
                    # earlier version, which does not queue, may still hold it a moment).
                    if fd is None:
                        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
                    if try_lock(fd):
                        break
                if time.monotonic() >= deadline:
                    if fd is not None:
                        os.close(fd)
                    self._leave(ticket)
                    return False
                time.sleep(QUEUE_POLL_SECONDS)
        except BaseException:
            if fd is not None:
                os.close(fd)
            self._leave(ticket)
            raise
        self._fd, self._ticket = fd, ticket
        return True

    def _leave(self, ticket: Ticket | None) -> None:
        if self.queue is not None and ticket is not None:
            self.queue.leave(ticket)

    def _release_shared(self) -> None:
        fd, self._fd = self._fd, None
        ticket, self._ticket = self._ticket, None
        try:
            if fd is not None:
                try:
                    unlock(fd)
                finally:
                    os.close(fd)
        finally:
            self._leave(ticket)  # the next waiter's turn, once the lock is free
