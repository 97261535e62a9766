"""An exclusive lock shared by processes and threads: ``flock`` on a lock file, taken in turn.

``flock`` excludes other open file descriptions, so other processes and other threads of this
one (each acquisition opens the file anew) alike. The re-entrant front (``reentrant_lock``) lets
the thread that holds the lock take it again and queues the process's other threads in order;
the queue of ``lock_queue`` orders the processes, so waiting writers are served in the order
they came instead of whoever polls at the right moment. POSIX only.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from langgraph_topics.stores.lock_queue import LockQueue, Ticket
from langgraph_topics.stores.reentrant_lock import ReentrantLock

QUEUE_POLL_SECONDS = 0.01
"""How often a queued waiter looks whether its turn came: a hand-over waits this long at
most, and a look is a directory listing and a lock attempt on the waiter ahead."""


class FileLock(ReentrantLock):
    """A re-entrant, inter-process exclusive lock on ``path`` (created when missing).

    The lock file and its queue directory are never deleted: removing the file while another
    process waits on it would let two processes hold "the" lock on two different files.
    """

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = Path(path)
        self.queue = LockQueue(self.path)
        self._fd: int | None = None
        self._ticket: Ticket | None = None

    def _take_shared(self, deadline: float) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        ticket = self.queue.join()
        fd: int | None = None
        try:
            while True:
                if self.queue.first(ticket):
                    # The lock itself is free once the waiters ahead left (a process of an
                    # earlier version, which does not queue, may still hold it a moment).
                    if fd is None:
                        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
                    if _try_flock(fd):
                        break
                if time.monotonic() >= deadline:
                    if fd is not None:
                        os.close(fd)
                    self.queue.leave(ticket)
                    return False
                time.sleep(QUEUE_POLL_SECONDS)
        except BaseException:
            if fd is not None:
                os.close(fd)
            self.queue.leave(ticket)
            raise
        self._fd, self._ticket = fd, ticket
        return True

    def _release_shared(self) -> None:
        fd, self._fd = self._fd, None
        ticket, self._ticket = self._ticket, None
        try:
            if fd is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                finally:
                    os.close(fd)
        finally:
            if ticket is not None:  # the next waiter's turn, once the lock is free
                self.queue.leave(ticket)


def _try_flock(fd: int) -> bool:
    """Take the exclusive ``flock`` on ``fd`` if no one holds it; whether it was taken."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
