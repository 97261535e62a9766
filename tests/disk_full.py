"""A disk that fills at a chosen write point, simulated in this process (issue 41 item 3).

Used by ``test_disk_full_writes.py``. A write point is every low-level write of the package's
files (``os.write`` as ``stores/durable`` calls it: topic files, links, the retrieval index,
whole-file replacements such as catalogs, decoded copies and the chat's pending line) and every
write of the checkpoint database (``SqliteSaver.put`` and ``put_writes``). At the chosen point
the write fails as a full disk fails it:

- ``"partial"``: half of the bytes land, then ``ENOSPC`` (what a nearly full disk does);
- ``"flush"``: every byte lands, then the flush fails with ``ENOSPC`` (delayed allocation);
- a checkpoint write raises SQLite's "database or disk is full" inside the saver's cursor.

With ``stays=True`` every later write fails too (a disk that stays full); otherwise only that
one fails (a large write refused while the small ones after it still fit, as a real full disk
often does): the case that used to store a message twice.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

Variant = Literal["partial", "flush"]


class FullDisk:
    """Counts write points; refuses the chosen one (and, if it stays full, all after it)."""

    def __init__(
        self, at: int | None = None, variant: Variant = "partial", *, stays: bool = False
    ) -> None:
        self.at = at
        self.variant = variant
        self.stays = stays
        self.kinds: list[str] = []
        self.refused: list[str] = []
        self._lock = threading.Lock()

    def refuse(self, kind: str) -> bool:
        """Count one point; True when it must fail."""
        with self._lock:
            self.kinds.append(kind)
            count = len(self.kinds)
            full = self.at is not None and (count >= self.at if self.stays else count == self.at)
            if full:
                self.refused.append(kind)
            return full


def _no_space() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@contextmanager
def filled(disk: FullDisk) -> Iterator[FullDisk]:
    """Install ``disk``'s write points in this process for the block."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from langgraph_topics.stores import durable

    real_os = durable.os
    shim = types.ModuleType("os")
    shim.__dict__.update(vars(real_os))
    refused_write: list[int] = []  # fds whose bytes landed and whose flush must fail

    def write(fd: int, data: Any) -> int:
        if not disk.refuse("file"):
            return real_os.write(fd, data)
        if disk.variant == "flush":
            refused_write.append(fd)
            return real_os.write(fd, data)
        landed = len(data) // 2
        if landed:
            real_os.write(fd, bytes(data[:landed]))
        raise _no_space()

    def fsync(fd: int) -> None:
        if fd in refused_write:
            refused_write.remove(fd)
            raise _no_space()
        real_os.fsync(fd)

    shim.write = write  # type: ignore[attr-defined]
    shim.fsync = fsync  # type: ignore[attr-defined]

    originals: dict[str, Callable[..., Any]] = {}

    def refusing(method: str) -> None:
        original = originals[method] = getattr(SqliteSaver, method)

        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            if disk.refuse("checkpoint"):
                with self.cursor() as _:  # the saver's own fault handling names the file
                    raise sqlite3.OperationalError("database or disk is full")
            return original(self, *args, **kwargs)

        setattr(SqliteSaver, method, wrapper)

    durable.os = shim  # type: ignore[assignment]
    for method in ("put", "put_writes"):
        refusing(method)
    try:
        yield disk
    finally:
        durable.os = real_os
        for method, original in originals.items():
            setattr(SqliteSaver, method, original)
