"""Exclusive locks on open file descriptors, on every platform, through ``filelock``.

The thread locks, their queue of waiters and the chat sessions lock files they opened
themselves (they compare inodes and rename locked files), so they lock a descriptor rather
than hand a path to a lock object. ``filelock``'s descriptor locks are the same primitive as
its ``FileLock``: ``flock`` on POSIX, exactly what this package called before, and
``LockFileEx`` on Windows; importing this module imports neither ``fcntl`` nor ``filelock``
(whose import costs about 0.1 s, paid at the first lock).
"""

from __future__ import annotations

import os
from pathlib import Path

ORDER_POLL_SECONDS = 0.001
"""How often a blocking lock is tried again (held for a few system calls at a time)."""


def try_lock(fd: int) -> bool:
    """Take the exclusive lock on ``fd`` if no other open file holds it; whether it was taken.

    Raises:
        OSError: The lock cannot be taken at all (not merely held by someone else).
    """
    from filelock import lock_descriptor

    return lock_descriptor(fd, blocking=False)


def lock(fd: int) -> None:
    """Take the exclusive lock on ``fd``, waiting as long as it takes (short holds only)."""
    from filelock import lock_descriptor

    lock_descriptor(fd, blocking=True, poll_interval=ORDER_POLL_SECONDS)


def unlock(fd: int) -> None:
    """Let go of the lock on ``fd`` (the descriptor stays open)."""
    from filelock import unlock_descriptor

    unlock_descriptor(fd)


def held_by_another(path: Path) -> bool:
    """Whether another open file holds the lock of ``path`` now (a missing file: no one)."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        if not try_lock(fd):
            return True
        unlock(fd)
        return False
    finally:
        os.close(fd)
