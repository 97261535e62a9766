"""The re-entrant front of a lock shared with other processes, and its polling.

``FileLock`` (``flock`` on a file, with a queue of waiters) and ``AdvisoryLock`` (a PostgreSQL
advisory lock) both put an in-process re-entrant lock in front of the shared one: it lets the
thread that holds the lock take it again (``chat`` inside ``writing``) and keeps the process's
other threads from queueing for the shared lock more than once. Only the taking and letting go
of the shared lock differ.

Both are fair: the front hands the lock to the threads of this process in the order they asked
(a plain ``RLock`` wakes any waiter, so a thread that lets go and asks again could take it over
and over), and the shared locks serve the processes in the order they asked (see each).
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable

POLL_SECONDS = 0.05
"""How often a waiting acquirer tries the shared lock again."""


def retry_until(
    deadline: float, attempt: Callable[[], bool], poll_seconds: float = POLL_SECONDS
) -> bool:
    """Try ``attempt`` again every ``poll_seconds``; False once ``deadline`` passed without luck.

    The first try is the caller's: this only waits and tries again.

    Args:
        deadline: A ``time.monotonic()`` value.
        attempt: Takes the shared lock without waiting; whether it did.
        poll_seconds: The pause between two tries.
    """
    while time.monotonic() < deadline:
        time.sleep(poll_seconds)
        if attempt():
            return True
    return False


class FifoRLock:
    """A re-entrant lock that the waiting threads get in the order they asked for it."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._owner: int | None = None
        self._count = 0
        self._waiting: deque[tuple[int, threading.Lock]] = deque()

    def acquire(self, timeout: float) -> bool:
        """Take the lock (again, for its owner), waiting at most ``timeout`` seconds."""
        me = threading.get_ident()
        with self._mutex:
            if self._owner == me:
                self._count += 1
                return True
            if self._owner is None and not self._waiting:
                self._owner, self._count = me, 1
                return True
            gate = threading.Lock()
            gate.acquire()
            entry = (me, gate)
            self._waiting.append(entry)
        if gate.acquire(timeout=timeout):
            return True  # ``release`` made this thread the owner before opening the gate
        with self._mutex:
            if entry in self._waiting:
                self._waiting.remove(entry)
                return False
        return True  # handed over as the wait ran out

    def release(self) -> None:
        """Let go of one hold; the last one hands the lock to the longest waiting thread."""
        with self._mutex:
            if self._owner != threading.get_ident():
                raise RuntimeError("release of a lock this thread does not hold")
            self._count -= 1
            if self._count:
                return
            if self._waiting:
                owner, gate = self._waiting.popleft()
                self._owner, self._count = owner, 1
                gate.release()
            else:
                self._owner = None


class ReentrantLock(ABC):
    """A re-entrant lock in front of one shared by processes (see the module docstring)."""

    def __init__(self) -> None:
        self._local = FifoRLock()
        self._depth = 0

    @property
    def depth(self) -> int:
        """How many times the calling thread holds the lock (meaningful for the holder only)."""
        return self._depth

    def acquire(self, timeout: float) -> bool:
        """Take the lock, waiting at most ``timeout`` seconds; False when it stayed taken."""
        timeout = min(max(0.0, timeout), threading.TIMEOUT_MAX)  # inf: wait as long as allowed
        deadline = time.monotonic() + timeout
        if not self._local.acquire(timeout=timeout):
            return False
        if self._depth:
            self._depth += 1
            return True
        try:
            taken = self._take_shared(deadline)
        except BaseException:
            self._local.release()
            raise
        if not taken:
            self._local.release()
            return False
        self._depth = 1
        return True

    def release(self) -> None:
        """Release one hold; the shared lock goes with the last one."""
        self._depth -= 1
        try:
            if self._depth == 0:
                self._release_shared()
        finally:
            self._local.release()

    @abstractmethod
    def _take_shared(self, deadline: float) -> bool:
        """Take the shared lock by ``deadline`` (``time.monotonic()``); whether it was taken.

        Called by the one thread in front; when it returns False or raises, it leaves nothing
        held or open.
        """

    @abstractmethod
    def _release_shared(self) -> None:
        """Let go of the shared lock (the last hold of the holding thread ended)."""
