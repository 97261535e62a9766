"""An exclusive lock shared by processes and threads: ``fcntl.flock`` on a lock file.

``flock`` excludes other open file descriptions, so other processes and other threads of this
one (each acquisition opens the file anew) alike. The re-entrant front (``reentrant_lock``) lets
the thread that holds the lock take it again and keeps the process's other threads from
polling the file. POSIX only.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from langgraph_topics.stores.reentrant_lock import ReentrantLock, retry_until


class FileLock(ReentrantLock):
    """A re-entrant, inter-process exclusive lock on ``path`` (created when missing).

    The lock file is never deleted: removing it while another process waits on it would let
    two processes hold "the" lock on two different files.
    """

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = Path(path)
        self._fd: int | None = None

    def _take_shared(self, deadline: float) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            taken = _try_flock(fd) or retry_until(deadline, lambda: _try_flock(fd))
        except BaseException:
            os.close(fd)
            raise
        if not taken:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def _release_shared(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _try_flock(fd: int) -> bool:
    """Take the exclusive ``flock`` on ``fd`` if no one holds it; whether it was taken."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
