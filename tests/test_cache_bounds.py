"""Caches that a long thread fills stay within their bounds (issue 41 item 7)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from langgraph_topics.roles.native.topic_window import LEXICAL_INDEXES, NativeTopicWindow
from langgraph_topics.roles.native.vectors import VectorCache, embed_matrix
from langgraph_topics.stores.embeddings import CachingEmbedder, embed_array, entry_bytes


class CountingEmbedder:
    """64-float vectors from the text's length; counts what it encodes."""

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.encoded.extend(texts)
        return [[float(len(t))] + [1.0] * 63 for t in texts]


def _texts(count: int) -> list[str]:
    return [f"message number {n} about the trip" for n in range(count)]


def test_caching_embedder_stays_within_its_bytes() -> None:
    inner = CountingEmbedder()
    one = entry_bytes(_texts(1)[0], np.zeros(64, np.float32))
    cache = CachingEmbedder(inner, max_bytes=10 * one)
    for text in _texts(100):
        cache.embed([text])
    assert cache.held_bytes <= 10 * one
    assert 8 <= cache.held_texts <= 10


def test_caching_embedder_keeps_float32_arrays_and_evicts_the_oldest() -> None:
    inner = CountingEmbedder()
    texts = _texts(3)
    cache = CachingEmbedder(inner, max_bytes=2 * entry_bytes(texts[0], np.zeros(64, np.float32)))
    cache.embed(texts[:2])
    cache.embed([texts[0]])  # used again: the newest
    cache.embed([texts[2]])  # evicts texts[1], the least recently used
    inner.encoded.clear()
    vectors = cache.embed_array([texts[0], texts[2], texts[1]])
    assert inner.encoded == [texts[1]]
    assert vectors.dtype == np.float32 and vectors.shape == (3, 64)
    assert all(v.dtype == np.float32 for v in cache._vectors.values())
    assert cache.embed([texts[0]]) == [[float(len(texts[0]))] + [1.0] * 63]


def test_caching_embedder_never_keeps_a_text_bigger_than_its_bound() -> None:
    cache = CachingEmbedder(CountingEmbedder(), max_bytes=1000)
    vectors = cache.embed_array(["x" * 5000, "short"])
    assert vectors.shape == (2, 64)
    assert cache.held_texts == 1 and cache.held_bytes <= 1000


def test_an_empty_caching_embedder_is_still_an_embedder() -> None:
    assert CachingEmbedder(CountingEmbedder())


def test_embed_array_takes_either_kind_of_embedder() -> None:
    plain = CountingEmbedder()
    assert embed_array(plain, ["a", "bb"]).shape == (2, 64)
    assert embed_array(CachingEmbedder(plain), ["a"]).dtype == np.float32
    assert embed_array(plain, []).shape == (0, 0)
    assert embed_matrix(CachingEmbedder(plain), ["a", "b"]).shape == (2, 64)


def test_vector_cache_stays_within_its_bytes_and_copies_rows() -> None:
    inner = CountingEmbedder()
    cache = VectorCache(inner, max_bytes=20_000)
    for start in range(0, 200, 10):  # batches of 10: kept rows are copies, not batch views
        cache.embed([(text, text) for text in _texts(200)[start : start + 10]])
    assert 0 < cache.held_bytes <= 20_000
    assert len(cache) < 200
    assert all(v.base is None for v in cache._entries.values())


def test_vector_cache_entry_bound_still_holds() -> None:
    cache = VectorCache(CountingEmbedder(), max_entries=5)
    cache.embed([(text, text) for text in _texts(20)])
    assert len(cache) == 5


def test_topic_window_keeps_a_bounded_number_of_lexical_indexes() -> None:
    window = NativeTopicWindow(CountingEmbedder())
    message = {"id": "m1", "role": "user", "content": "kyoto temples in april", "timestamp": ""}
    for n in range(LEXICAL_INDEXES + 10):
        window._lexical(f"t{n}", [(message, "kyoto temples in april")])  # type: ignore[list-item]
    assert len(window._lexical_indexes) == LEXICAL_INDEXES
    assert "t0" not in window._lexical_indexes
