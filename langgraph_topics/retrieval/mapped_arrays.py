"""Long-lived growing arrays on pages of their own, given back to the system when replaced.

glibc serves a large allocation from its heap once a freed mapping has raised its mmap
threshold (up to 32 MB), and numpy's large arrays come from ``malloc``. The retrieval index's
vectors matrix grows by a quarter at a time: each old copy, 4 to 32 MB over a long thread,
then stayed in the heap as a free hole that other allocations only partly reuse. Over a
4,000-turn soak the free bytes glibc held rose from 48 to 95 MB, jumping as the matrix grew
(``bench soak``, issue 41 item 7). A matrix on an anonymous mapping of its own is unmapped as
soon as its last view goes, whatever glibc's threshold, and is never advised huge pages
(``ordinary_pages``).
"""

from __future__ import annotations

import math
import mmap
from typing import Any

import numpy as np
import numpy.typing as npt


def mapped_empty(shape: tuple[int, ...], dtype: npt.DTypeLike) -> npt.NDArray[Any]:
    """An uninitialised (in fact zeroed) writable array on an anonymous mapping of its own.

    The mapping lives as long as the array or any view of it, and is unmapped with the last.
    """
    kind = np.dtype(dtype)
    count = math.prod(shape)
    # A mapping cannot be empty; an empty array needs none.
    if count == 0:
        return np.empty(shape, kind)
    pages = mmap.mmap(-1, count * kind.itemsize)
    return np.frombuffer(pages, dtype=kind, count=count).reshape(shape)
