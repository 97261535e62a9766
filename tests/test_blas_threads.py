"""The encoder's small products stay on the calling thread (issue 34).

Spread over OpenBLAS's threads, a turn's encode of one or two texts left them spinning for
about 0.1 s, ~120 ms of the process's CPU a turn. The products are made in blocks OpenBLAS
keeps on one thread: the same values (to the last bits a batch's composition already moves),
the same shapes and dtypes, no block a single row unless the product is one (OpenBLAS makes
those as matrix-vector products, spread from a smaller size), an import's big products still
made whole.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langgraph_topics.stores.blas_threads import (
    BLOCK_MACS,
    ROW_MACS,
    OneThreadWeights,
    bulk_products,
    keep_encoder_on_one_thread,
    one_thread_matmul,
    one_thread_weights,
)
from langgraph_topics.stores.embeddings import UseEmbedder

TEXTS = ["What did Caroline say about the adoption agency?", "我们周末去爬山吧"]


def blocks_made(
    monkeypatch: pytest.MonkeyPatch, left: np.ndarray, right: np.ndarray
) -> list[tuple[int, int]]:
    """The rows and multiply-adds of each product ``one_thread_matmul`` asks numpy for."""
    blocks: list[tuple[int, int]] = []
    real = np.matmul

    def counting(a: np.ndarray, b: np.ndarray, **options: Any) -> np.ndarray:
        blocks.append((a.shape[0], a.shape[0] * a.shape[1] * b.shape[1]))
        return np.asarray(real(a, b, **options))

    monkeypatch.setattr(np, "matmul", counting)
    one_thread_matmul(left, right)
    monkeypatch.setattr(np, "matmul", real)
    return blocks


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 70),
    inner=st.sampled_from([1, 7, 256, 512, 1280]),
    columns=st.integers(1, 800),
)
def test_a_blocked_product_is_the_product(rows: int, inner: int, columns: int) -> None:
    generator = np.random.default_rng(rows * 1000 + columns)
    left = generator.standard_normal((rows, inner), dtype=np.float32)
    right = generator.standard_normal((inner, columns), dtype=np.float32)
    product = one_thread_matmul(left, right)
    assert product.shape == (rows, columns) and product.dtype == np.float32
    np.testing.assert_allclose(product, left @ right, rtol=1e-5, atol=1e-4)


def test_every_block_is_under_the_threads_size(monkeypatch: pytest.MonkeyPatch) -> None:
    generator = np.random.default_rng(0)
    for rows, inner, columns in [
        (20, 512, 768),
        (1, 1280, 512),
        (37, 1280, 256),
        (17, 512, 768),
        (3, 768, 512),
    ]:
        left = generator.standard_normal((rows, inner), dtype=np.float32)
        right = generator.standard_normal((inner, columns), dtype=np.float32)
        blocks = blocks_made(monkeypatch, left, right)
        assert len(blocks) > 1
        assert max(size for _, size in blocks) <= (ROW_MACS if rows == 1 else BLOCK_MACS)
        assert sum(size for _, size in blocks) == rows * inner * columns  # every value once
        assert rows == 1 or min(height for height, _ in blocks) >= 2


def test_a_big_product_is_made_whole_only_in_bulk_work(monkeypatch: pytest.MonkeyPatch) -> None:
    left = np.ones((384, 512), dtype=np.float32)
    right = np.ones((512, 768), dtype=np.float32)
    with bulk_products():
        assert blocks_made(monkeypatch, left, right) == [(384, 384 * 512 * 768)]
    # A chat's split after the reply: its batch would leave the threads spinning.
    assert len(blocks_made(monkeypatch, left, right)) > 1


def test_weights_on_the_right_of_the_operator_multiply_in_blocks() -> None:
    weights = one_thread_weights(np.eye(512, dtype=np.float32) * 2)
    activations = np.arange(20 * 512, dtype=np.float32).reshape(20, 512)
    product = activations @ weights
    assert type(product) is np.ndarray  # plain again: nothing downstream sees the subclass
    np.testing.assert_array_equal(product, activations * 2)
    assert isinstance(weights, OneThreadWeights)


def test_the_encoder_runs_with_its_weights_wrapped() -> None:
    vectors = UseEmbedder().embed_array(TEXTS)
    model = UseEmbedder._model
    assert model is not None
    assert isinstance(model._model.proj_W, OneThreadWeights)
    assert all(isinstance(w, OneThreadWeights) for w in model._model.w1)
    assert vectors.shape == (2, 512)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_an_unknown_layout_is_left_as_it_is() -> None:
    class Other:
        weights = np.ones((4, 4), dtype=np.float32)

    assert keep_encoder_on_one_thread(Other()) == 0
    assert type(Other.weights) is np.ndarray
