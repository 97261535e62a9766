"""The waiters of a lock file, in the order they came, across processes (POSIX only).

``flock`` itself is not fair: a waiter polling a held lock gets it only if it happens to try in
the moment between one release and the next acquisition, so a process that lets go and asks
again at once (a writer's next turn) can take it over and over while another waits out its
timeout. A ``FileLock`` therefore queues first: each waiter draws the next ticket and holds an
exclusive ``flock`` on a ticket file of its own (``<lock file>.queue/<number>``) until it has
taken and let go of the lock; it tries the lock only once no earlier ticket belongs to a live
waiter. The kernel lets go of a dead process's ``flock``, so a ticket file that can be locked
is a dead waiter's: the next waiter that finds it removes it, and the queue moves on.

A ticket is drawn under a short ``flock`` on ``<lock file>.queue/.order`` (a few system calls
long), its number one more than the highest in the directory. Its file is created, locked and
only then renamed into place, so no one ever sees a live ticket unlocked.

The locks are ``filelock``'s descriptor locks (``stores.fd_locks``: ``flock`` here). The
queue itself needs POSIX files: a locked ticket is renamed into place and removed while its
waiter still has it open, which Windows refuses; there ``FileLock`` goes without it
(:data:`QUEUE_SUPPORTED`).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from langgraph_topics.stores.fd_locks import lock, try_lock

ORDER_FILE = ".order"
"""Held while a ticket is drawn."""
QUEUE_SUPPORTED = os.name == "posix"
"""Whether waiters queue (see the module docstring); elsewhere the first to poll wins."""
JOINING = ".joining-"
"""A ticket file before it is locked and renamed (seen only while the order lock is held)."""


@dataclass(frozen=True)
class Ticket:
    """A waiter's place: its number and its locked ticket file."""

    number: int
    path: Path
    fd: int


class LockQueue:
    """The queue in front of ``lock_path`` (see the module docstring)."""

    def __init__(self, lock_path: Path) -> None:
        self.directory = lock_path.with_name(lock_path.name + ".queue")

    def join(self) -> Ticket:
        """Draw the next ticket; its file stays locked until :meth:`leave`."""
        self.directory.mkdir(parents=True, exist_ok=True)
        order = os.open(self.directory / ORDER_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            lock(order)
            numbers = []
            for name in os.listdir(self.directory):
                if name.isdigit():
                    numbers.append(int(name))
                elif name.startswith(JOINING):  # a process died while joining
                    _unlink(self.directory / name)
            number = max(numbers, default=0) + 1
            joining = self.directory / f"{JOINING}{os.getpid()}-{threading.get_ident()}"
            fd = os.open(joining, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                if not try_lock(fd):  # a file of its own, just created: no one else holds it
                    raise OSError(f"{joining}: a new ticket file is locked by another process")
                path = self.directory / f"{number:012d}"
                os.replace(joining, path)
            except BaseException:
                os.close(fd)
                _unlink(joining)
                raise
        finally:
            os.close(order)  # closing lets go of the order lock
        return Ticket(number, path, fd)

    def first(self, ticket: Ticket) -> bool:
        """Whether no live waiter holds an earlier ticket (dead waiters' tickets are removed)."""
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return True
        earlier = sorted(int(n) for n in names if n.isdigit() and int(n) < ticket.number)
        return not any(_alive(self.directory / f"{number:012d}") for number in earlier)

    def leave(self, ticket: Ticket) -> None:
        """Give the place up (the lock was let go, or never taken)."""
        try:
            _unlink(ticket.path)
        finally:
            os.close(ticket.fd)


def _alive(path: Path) -> bool:
    """Whether a ticket's waiter still holds its file; a dead waiter's file is removed."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        if not try_lock(fd):
            return True
        # The file opened may be one its waiter just left, and the number drawn again since
        # (the highest ticket gone, the next one gets its number): only remove the file that
        # is still at the path.
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            _unlink(path)
        return False
    finally:
        os.close(fd)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
