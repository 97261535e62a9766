"""Each row of a matrix times a vector, computed on the calling thread, in blocks.

OpenBLAS spreads a matrix-vector product of more than a few hundred thousand values over
every core. On a machine that is busy anyway (a server, or the topic windows of the same
turn), its threads wait for one another: 10,000 × 512 values took 8 ms at once and 0.8 ms in
blocks, measured on 2 loaded cores (0.5 and 0.65 ms when idle). A block of at most
``BLOCK_VALUES`` values stays on one thread and starts at a multiple of ``ROW_ALIGNMENT``
rows, as the kernel's own groups of rows do, so the result is the product computed on one
thread, bit for bit. (The whole product's last bits depend on where OpenBLAS splits the rows
between its threads, so on the number of cores: 10,033 rows of 512 values differ on 1 and 2.)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

BLOCK_VALUES = 1 << 18
"""Values per block: under the size from which OpenBLAS starts more threads."""
ROW_ALIGNMENT = 64
"""Every block but the last holds a multiple of this many rows."""


def row_dots(matrix: npt.NDArray[Any], vector: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``matrix @ vector`` for a 2-D ``matrix``, block by block (same dtype as the product)."""
    rows = len(matrix)
    step = _block_rows(matrix.shape[1])
    if rows <= step:
        return np.asarray(matrix @ vector)
    out = np.empty(rows, dtype=np.result_type(matrix, vector))
    for start in range(0, rows, step):
        np.matmul(matrix[start : start + step], vector, out=out[start : start + step])
    return out


def picked_row_dots(
    matrix: npt.NDArray[Any], rows: npt.NDArray[np.int64], vector: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """``row_dots(matrix[rows] as float32, vector)``, bit for bit, without that whole copy.

    The picked rows are gathered (and converted from float16) a block at a time. A copy of
    the ~2,400 rows a large search scores is about 5 MB, and numpy asks the kernel for huge
    pages for any array from 4 MB on: where the kernel compacts memory to find them (the
    default ``defrag=madvise``), the first touch of each 2 MB took milliseconds, and a copy
    touched sparsely (a cache of converted rows) took 0.6–1.4 s of a 100,000-message cold
    start here. A block stays under 1 MB.
    """
    out = np.empty(len(rows), dtype=np.float32)
    step = _block_rows(matrix.shape[1])
    for start in range(0, len(rows), step):
        block = np.asarray(matrix[rows[start : start + step]], dtype=np.float32)
        np.matmul(block, vector, out=out[start : start + step])
    return out


def _block_rows(width: int) -> int:
    """Rows in a block of a matrix ``width`` values wide."""
    return max(1, BLOCK_VALUES // max(1, width) // ROW_ALIGNMENT) * ROW_ALIGNMENT
