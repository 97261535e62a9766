"""Blocked matrix-vector products: the evidence scores are those of the whole product, exactly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.bench.search import synthetic_messages
from langgraph_topics.retrieval import evidence, message_index, projection
from langgraph_topics.retrieval.evidence import EvidenceScorer
from langgraph_topics.retrieval.message_index import MessageIndex
from langgraph_topics.retrieval.row_dots import BLOCK_VALUES, picked_row_dots, row_dots


def _whole(matrix: npt.NDArray[Any], vector: npt.NDArray[Any]) -> npt.NDArray[Any]:
    return np.asarray(matrix @ vector)


def _whole_picked(
    matrix: npt.NDArray[Any], rows: npt.NDArray[np.int64], vector: npt.NDArray[Any]
) -> npt.NDArray[Any]:
    return _whole(np.asarray(matrix[rows], np.float32), vector)


SHAPES = [(0, 512), (3, 512), (10_000, 512), (10_033, 512), (30_000, 64), (7_001, 384), (901, 1536)]

_ONE_THREAD = """
import sys
import numpy as np
shapes = [tuple(int(n) for n in pair.split("x")) for pair in sys.argv[2:]]
products = {}
for rows, width in shapes:
    generator = np.random.default_rng(rows + width)
    matrix = generator.standard_normal((rows, width)).astype(np.float32)
    vector = generator.standard_normal(width).astype(np.float32)
    products[f"{rows}x{width}"] = matrix @ vector
np.savez(sys.argv[1], **products)
"""


def _operands(rows: int, width: int) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    generator = np.random.default_rng(rows + width)
    matrix = generator.standard_normal((rows, width)).astype(np.float32)
    return matrix, generator.standard_normal(width).astype(np.float32)


def test_blocks_give_the_one_thread_product_bit_for_bit(tmp_path: Path) -> None:
    """What BLAS computes on one core, exactly; with more threads, its last bits may move.

    The whole product's own last bits depend on how OpenBLAS splits the rows between its
    threads (10,033 rows on 2 cores differ from 1 core); the blocks never split a kernel's
    group of rows, so they always give the one-thread product.
    """
    saved = tmp_path / "one-thread.npz"
    done = subprocess.run(
        [sys.executable, "-c", _ONE_THREAD, str(saved), *(f"{r}x{w}" for r, w in SHAPES)],
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    with np.load(saved) as one_thread:
        for rows, width in SHAPES:
            matrix, vector = _operands(rows, width)
            blocked = row_dots(matrix, vector)
            assert blocked.dtype == np.float32 and blocked.shape == (rows,)
            assert np.array_equal(blocked, one_thread[f"{rows}x{width}"]), (rows, width)
            assert np.allclose(blocked, matrix @ vector, rtol=1e-6, atol=1e-5)
            assert np.array_equal(row_dots(matrix[64:], vector), row_dots(matrix, vector)[64:])


def test_a_product_larger_than_a_block_is_taken_in_several() -> None:
    calls: list[int] = []
    matrix = np.ones((4 * BLOCK_VALUES // 512, 512), dtype=np.float32)
    original = np.matmul

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(len(args[0]))
        return original(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(np, "matmul", counting)
        row_dots(matrix, np.ones(512, dtype=np.float32))
    assert len(calls) == 4 and max(calls) * 512 <= BLOCK_VALUES


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize(
    ("rows", "width", "picked"),
    [(0, 512, 0), (50, 512, 7), (9_000, 512, 2_400), (3_000, 1536, 1_100)],
)
def test_picked_rows_give_the_product_of_their_copy_bit_for_bit(
    dtype: type[np.floating[Any]], rows: int, width: int, picked: int
) -> None:
    matrix, vector = _operands(rows, width)
    stored = matrix.astype(dtype)
    generator = np.random.default_rng(picked)
    chosen = np.sort(generator.choice(rows, picked, replace=False)).astype(np.int64)
    dots = picked_row_dots(stored, chosen, vector)
    assert dots.dtype == np.float32 and dots.shape == (picked,)
    assert np.array_equal(dots, row_dots(stored[chosen].astype(np.float32), vector))


def test_picked_rows_are_gathered_a_block_at_a_time() -> None:
    """No copy of all the picked rows: arrays from 4 MB on cost huge-page faults."""
    calls: list[int] = []
    matrix = np.ones((20_000, 512), dtype=np.float16)
    original = np.matmul

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0].nbytes)
        return original(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(np, "matmul", counting)
        picked_row_dots(matrix, np.arange(0, 20_000, 2), np.ones(512, dtype=np.float32))
    assert len(calls) > 1 and max(calls) <= 4 * BLOCK_VALUES


@pytest.mark.parametrize("large", [False, True])
def test_evidence_scores_equal_those_of_whole_products(
    large: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    count = 3_000
    if large:  # the two-pass search: projected cosines, then exact rows
        monkeypatch.setattr(message_index, "LARGE_INDEX", 2_000)
    messages = synthetic_messages(count, seed=5)
    index = MessageIndex(None, HashEmbedder(512))
    index.add(messages, [f"topic-{i // 300}" for i in range(count)])
    assert (index.snapshot().projection is not None) is large
    unsplit = [{**m, "id": f"u{i}"} for i, m in enumerate(synthetic_messages(30, seed=7))]
    queries = ["kyoto train budget", "guitar lesson on friday", "passport renewal", ""]
    blocked = [EvidenceScorer(index.embedder).score(index, q, unsplit) for q in queries]
    monkeypatch.setattr(evidence, "row_dots", _whole)
    monkeypatch.setattr(projection, "row_dots", _whole)
    monkeypatch.setattr(message_index, "picked_row_dots", _whole_picked)
    whole = [EvidenceScorer(index.embedder).score(index, q, unsplit) for q in queries]
    for fast, reference in zip(blocked, whole, strict=True):
        assert np.allclose(fast.dense, reference.dense, rtol=0, atol=1e-6)
        assert np.allclose(fast.score, reference.score, rtol=0, atol=1e-5)
        assert fast.top(50) == reference.top(50)
