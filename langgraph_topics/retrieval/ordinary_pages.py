"""The index's large arrays on ordinary pages: touching them never waits for a huge page.

On Linux numpy advises transparent huge pages for every array of 4 MB or more
(``madvise(MADV_HUGEPAGE)``). Where the kernel's THP ``defrag`` setting is ``madvise``, the
default of most distributions, the first touch of each 2 MB of such an array waits until the
kernel has a free huge page at hand (numpy/numpy#31590). Opening a 100,000-message index
allocates about 150 MB of arrays (the projection's shadows, BM25's postings) and its
background conversion 400 MB. On a 2-core virtual machine the same open took 0.47–0.72 s in
one process and 1.2–1.8 s in another with huge pages, and 0.52–0.70 s in every one of twelve
runs without; a process that had run for a while took 3.4–4.3 s for its cold start.

The arrays are read a few rows at a time by a search, so the few TLB misses ordinary pages
add are not seen; only their allocation is scoped, since the advice is given when memory is
allocated, not when it is touched.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np


def _numpy_setter() -> Callable[[bool], bool] | None:
    """The switch of numpy's huge-page advice (private, hence looked up; None if absent)."""
    for package in ("_core", "core"):
        multiarray = getattr(getattr(np, package, None), "multiarray", None)
        setter = getattr(multiarray, "_set_madvise_hugepage", None)
        if callable(setter):
            return setter  # type: ignore[no-any-return]
    return None


_SET_ADVICE = _numpy_setter()
_lock = threading.Lock()
_depth = 0
_advised_before = True


@contextmanager
def ordinary_pages() -> Iterator[None]:
    """Arrays allocated inside are not advised huge pages (by any thread, meanwhile).

    Nested and concurrent uses are counted: the advice is switched off by the first to enter
    and back to what it was by the last to leave. Where numpy has no such switch (another
    platform, another version), this does nothing.
    """
    global _depth, _advised_before
    if _SET_ADVICE is None:
        yield
        return
    with _lock:
        if _depth == 0:
            _advised_before = _SET_ADVICE(False)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _SET_ADVICE(_advised_before)
