"""Growing arrays on mappings of their own: given back to the system when dropped."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from langgraph_topics.retrieval.mapped_arrays import mapped_empty


def _resident_bytes() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_an_array_holds_what_is_written_and_views_keep_it() -> None:
    matrix = mapped_empty((1000, 512), np.float32)
    assert matrix.shape == (1000, 512) and matrix.dtype == np.float32
    matrix[:] = np.arange(512, dtype=np.float32)
    view = matrix[:10]
    del matrix
    gc.collect()
    assert np.array_equal(view[9], np.arange(512, dtype=np.float32))
    assert mapped_empty((0, 512), np.float16).shape == (0, 512)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_a_dropped_array_leaves_no_resident_memory_behind() -> None:
    # 24 MB: below glibc's largest mmap threshold, so a malloc'd copy could stay in the heap.
    before = _resident_bytes()
    matrix = mapped_empty((12_288, 512), np.float32)
    matrix.fill(1.0)
    assert _resident_bytes() - before >= 20 * 2**20
    del matrix
    gc.collect()
    assert _resident_bytes() - before < 4 * 2**20
