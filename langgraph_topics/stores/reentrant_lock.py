"""The re-entrant front of a lock shared with other processes, and its polling.

``FileLock`` (``flock`` on a file) and ``AdvisoryLock`` (a PostgreSQL advisory lock) both put
an in-process re-entrant lock in front of the shared one: it lets the thread that holds the
lock take it again (``chat`` inside ``writing``) and keeps the process's other threads from
polling the shared lock. Only the taking and letting go of the shared lock differ.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable

POLL_SECONDS = 0.05
"""How often a waiting acquirer tries the shared lock again."""


def retry_until(deadline: float, attempt: Callable[[], bool]) -> bool:
    """Try ``attempt`` again every ``POLL_SECONDS``; False once ``deadline`` passed without luck.

    The first try is the caller's: this only waits and tries again.

    Args:
        deadline: A ``time.monotonic()`` value.
        attempt: Takes the shared lock without waiting; whether it did.
    """
    while time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        if attempt():
            return True
    return False


class ReentrantLock(ABC):
    """A re-entrant lock in front of one shared by processes (see the module docstring)."""

    def __init__(self) -> None:
        self._local = threading.RLock()
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
