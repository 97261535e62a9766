"""An exclusive lock shared by processes and threads: ``fcntl.flock`` on a lock file.

``flock`` excludes other open file descriptions, so other processes and other threads of this
one (each acquisition opens the file anew) alike. An in-process re-entrant lock in front of it
lets the thread that holds the lock take it again (``chat`` inside ``writing``) and keeps the
other threads of the process from polling the file. POSIX only.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

POLL_SECONDS = 0.05
"""How often a waiting acquirer tries the file lock again."""


class FileLock:
    """A re-entrant, inter-process exclusive lock on ``path`` (created when missing).

    The lock file is never deleted: removing it while another process waits on it would let
    two processes hold "the" lock on two different files.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._local = threading.RLock()
        self._fd: int | None = None
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
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except BaseException:
            self._local.release()
            raise
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    self._local.release()
                    return False
                time.sleep(POLL_SECONDS)
            except BaseException:
                os.close(fd)
                self._local.release()
                raise
        self._fd, self._depth = fd, 1
        return True

    def release(self) -> None:
        """Release one hold; the file lock goes with the last one."""
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        self._local.release()
