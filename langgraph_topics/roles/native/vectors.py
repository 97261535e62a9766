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

    Topic windows of one turn run in parallel and all ask for the same query text at the same
    moment: a miss is embedded by the first thread that claims it while the others wait for
    that result (single flight), instead of every window encoding the same text at once.
    Embedding happens outside the lock, so windows asking for different texts never wait.
    """

    def __init__(self, embedder: Embedder, *, max_entries: int = 50_000) -> None:
        self.embedder = embedder
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, Vector] = OrderedDict()
        self._in_flight: dict[Hashable, threading.Event] = {}
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
        if not keyed_texts:
            return np.zeros((0, 0), dtype=np.float32)
        found: dict[Hashable, Vector] = {}
        claimed: dict[Hashable, str] = {}
        awaited: dict[Hashable, threading.Event] = {}
        with self._lock:
            for key, text in keyed_texts:
                vector = self._entries.get(key)
                if vector is not None:
                    self._entries.move_to_end(key)
                    found[key] = vector
                elif key in self._in_flight:
                    awaited[key] = self._in_flight[key]
                elif key not in claimed:
                    claimed[key] = text
                    self._in_flight[key] = threading.Event()
        if claimed:
            fresh: Matrix | None = None
            try:
                fresh = embed_matrix(self.embedder, list(claimed.values()))
            finally:  # waiters are released even when the embedder fails
                with self._lock:
                    events = [self._in_flight.pop(key) for key in claimed]
                    if fresh is not None:
                        for key, vector in zip(claimed, fresh, strict=True):
                            found[key] = vector
                            self._entries[key] = vector
                        while len(self._entries) > self.max_entries:
                            self._entries.popitem(last=False)
                for event in events:
                    event.set()
        for key, event in awaited.items():
            event.wait()
            with self._lock:
                vector = self._entries.get(key)
            # Evicted already, or the claiming thread failed: embed it here.
            found[key] = (
                vector
                if vector is not None
                else embed_matrix(self.embedder, [dict(keyed_texts)[key]])[0]
            )
        return np.stack([found[key] for key, _ in keyed_texts])
