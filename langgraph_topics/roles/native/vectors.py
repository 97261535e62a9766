"""Vector helpers of the native roles: matrices, centroids and a thread-safe embedding cache."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence

import numpy as np
import numpy.typing as npt

from langgraph_topics.stores.protocols import Embedder

Vector = npt.NDArray[np.float32]
Matrix = npt.NDArray[np.float32]

_MAX_EMBED_CHARS = 2000
"""Texts are cut to this many characters before embedding: a sentence encoder gains nothing
from a long tool output, and the cost of encoding grows with the length."""


def embed_matrix(embedder: Embedder, texts: Sequence[str]) -> Matrix:
    """Embed texts in one call into an ``(n, d)`` matrix (``(0, 0)`` for no texts)."""
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    vectors = embedder.embed([text[:_MAX_EMBED_CHARS] for text in texts])
    return np.asarray(vectors, dtype=np.float32)


def centroid(vectors: Matrix) -> Vector:
    """Return the normalised mean of the rows (a zero vector for an empty matrix)."""
    if vectors.size == 0:
        return np.zeros(0, dtype=np.float32)
    return unit(vectors.mean(axis=0))


def unit(vector: Vector) -> Vector:
    """Scale a vector to length 1 (a zero vector stays zero)."""
    norm = float(np.linalg.norm(vector))
    return vector if norm == 0.0 else (vector / norm).astype(np.float32)


def cosine(a: Vector, b: Vector) -> float:
    """Cosine similarity of two vectors (0 when either is empty or zero)."""
    if a.size == 0 or b.size == 0:
        return 0.0
    norms = float(np.linalg.norm(a)) * float(np.linalg.norm(b))
    return 0.0 if norms == 0.0 else float(np.dot(a, b)) / norms


class VectorCache:
    """A bounded, thread-safe map from keys to embeddings, least recently used evicted first.

    Topic windows of one turn run in parallel and each asks for its own messages, so reads and
    writes take a lock; embedding itself happens outside the lock so that windows never wait on
    each other's model calls (two windows may then embed the same miss once each, harmlessly).
    """

    def __init__(self, embedder: Embedder, *, max_entries: int = 50_000) -> None:
        self.embedder = embedder
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, Vector] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def embed(self, keyed_texts: Sequence[tuple[Hashable, str]]) -> Matrix:
        """Vectors of ``(key, text)`` pairs, embedding only the keys not cached, in one call.

        Args:
            keyed_texts: Each text with the key its embedding is cached under.

        Returns:
            An ``(n, d)`` matrix in the order of ``keyed_texts``.
        """
        found: dict[Hashable, Vector] = {}
        with self._lock:
            for key, _ in keyed_texts:
                vector = self._entries.get(key)
                if vector is not None:
                    self._entries.move_to_end(key)
                    found[key] = vector
        missing = {key: text for key, text in keyed_texts if key not in found}
        if missing:
            fresh = embed_matrix(self.embedder, list(missing.values()))
            with self._lock:
                for key, vector in zip(missing, fresh, strict=True):
                    found[key] = vector
                    self._entries[key] = vector
                    self._entries.move_to_end(key)
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
        if not keyed_texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([found[key] for key, _ in keyed_texts])
