"""Every scored message's group code: the index's codes, then the unsplit messages'.

On a large index that is 100,000 codes copied every turn for the few unsplit ones after them,
and between two splits only those change: the unsplit list gains the new exchange. The joined
codes are therefore written once into a buffer with room to spare, and a turn only writes
the codes past the furthest any earlier turn wrote: arrays handed out before end at their own
length and never see a later write (as ``MessageIndex.vectors`` grows its matrix).
"""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt

Codes = npt.NDArray[np.int64]
ROOM = 4096
"""Codes of room past the first join: a couple of thousand turns before another copy."""


class JoinedCodes:
    """``np.concatenate([indexed, extra])``, read-only, sharing one buffer while it can."""

    def __init__(self) -> None:
        self._indexed: Codes | None = None
        self._buffer: Codes = np.zeros(0, dtype=np.int64)
        self._written = 0
        """How far any array handed out reaches into ``_buffer``."""
        self._lock = threading.Lock()

    def join(self, indexed: Codes, extra: Codes) -> Codes:
        """The codes of ``indexed`` then of ``extra`` (a read-only array: it may be shared)."""
        total = len(indexed) + len(extra)
        with self._lock:
            buffer, written = self._buffer, self._written
            reusable = (
                self._indexed is indexed  # the index's codes change by a new array, never in place
                and len(buffer) >= total
                and np.array_equal(
                    buffer[len(indexed) : min(total, written)],
                    extra[: max(0, min(total, written) - len(indexed))],
                )
            )
            if reusable:
                if total > written:
                    buffer[written:total] = extra[written - len(indexed) :]
                    self._written = total
            else:
                buffer = np.empty(total + ROOM, dtype=np.int64)
                buffer[: len(indexed)] = indexed
                buffer[len(indexed) : total] = extra
                self._indexed, self._buffer, self._written = indexed, buffer, total
        joined = buffer[:total]
        joined.flags.writeable = False
        return joined
