"""Vector helpers of the native roles: matrices, centroids and a thread-safe embedding cache."""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence

import numpy as np
import numpy.typing as npt

from langgraph_topics.stores.embeddings import embed_array
from langgraph_topics.stores.protocols import Embedder

Vector = npt.NDArray[np.float32]
Matrix = npt.NDArray[np.float32]

_ENTRY_BYTES = 300
"""What one kept vector costs besides its key's and its floats' bytes: the array object, the
ordered dictionary's node and the size's entry."""

_MAX_EMBED_CHARS = 2000
"""Texts are cut to this many characters before embedding: a sentence encoder gains nothing
from a long tool output, and the cost of encoding grows with the length."""


def embed_matrix(embedder: Embedder, texts: Sequence[str]) -> Matrix:
    """Embed texts in one call into an ``(n, d)`` matrix (``(0, 0)`` for no texts)."""
    return embed_array(embedder, [text[:_MAX_EMBED_CHARS] for text in texts])


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


VECTOR_CACHE_BYTES = 4 * 2**20
"""Default bound of one :class:`VectorCache`: about 1,700 vectors of 512 floats with keys.
Each cache serves one role's repeated reads (a turn's query and briefs, the working set, a
brief's candidate sentences); the process-wide ``CachingEmbedder`` below them keeps more."""


def key_bytes(key: Hashable) -> int:
    """Bytes of a cache key: a string, a number, or a tuple of them (nested), as counted."""
    if isinstance(key, tuple):
        return sys.getsizeof(key) + sum(key_bytes(part) for part in key)
    return sys.getsizeof(key)


class VectorCache:
    """A bounded, thread-safe map from keys to embeddings, least recently used evicted first.

    Bounded by bytes (keys and vectors), and optionally by entries: a count bound alone let
    four role caches of 20,000 to 50,000 vectors each grow with a long thread (issue 41
    item 7). A kept vector is a copy of its row, so that it does not pin its whole batch.

    Topic windows of one turn run in parallel and all ask for the same query text at the same
    moment: a miss is embedded by the first thread that claims it while the others wait for
    that result (single flight), instead of every window encoding the same text at once.
    Embedding happens outside the lock, so windows asking for different texts never wait.
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        max_bytes: int = VECTOR_CACHE_BYTES,
        max_entries: int | None = None,
    ) -> None:
        self.embedder = embedder
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, Vector] = OrderedDict()
        self._sizes: dict[Hashable, int] = {}
        self._bytes = 0
        self._in_flight: dict[Hashable, threading.Event] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    @property
    def held_bytes(self) -> int:
        """Bytes the kept keys and vectors hold now (at most ``max_bytes``)."""
        with self._lock:
            return self._bytes

    def embed(
        self,
        keyed_texts: Sequence[tuple[Hashable, str]],
        *,
        stored: Callable[[str], Vector | None] | None = None,
    ) -> Matrix:
        """Vectors of ``(key, text)`` pairs, embedding only the keys not cached, in one call.

        Args:
            keyed_texts: Each text with the key its embedding is cached under.
            stored: The vector a store already holds for a text the cache lacks (None: none
                held), asked before that text is embedded.

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
            fresh: dict[Hashable, Vector] | None = None
            try:
                fresh = self._fetch(claimed, stored)
            finally:  # waiters are released even when the embedder fails
                with self._lock:
                    events = [self._in_flight.pop(key) for key in claimed]
                    if fresh is not None:
                        for key, row in fresh.items():
                            found[key] = row
                            self._keep(key, np.array(row, dtype=np.float32))
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

    def _fetch(
        self, claimed: dict[Hashable, str], stored: Callable[[str], Vector | None] | None
    ) -> dict[Hashable, Vector]:
        """The claimed keys' vectors: a store's where it holds one, else embedded (one call)."""
        rows: dict[Hashable, Vector] = {}
        if stored is not None:
            for key, text in claimed.items():
                vector = stored(text)
                if vector is not None:
                    rows[key] = vector
        missing = [key for key in claimed if key not in rows]
        if missing:
            matrix = embed_matrix(self.embedder, [claimed[key] for key in missing])
            rows.update(zip(missing, matrix, strict=True))
        return {key: rows[key] for key in claimed}

    def _keep(self, key: Hashable, vector: Vector) -> None:
        """Keep one vector, then evict the oldest past the bounds (the lock is held)."""
        size = key_bytes(key) + vector.nbytes + _ENTRY_BYTES
        if size > self.max_bytes:
            return
        self._bytes -= self._sizes.pop(key, 0)
        self._entries[key] = vector
        self._entries.move_to_end(key)
        self._sizes[key] = size
        self._bytes += size
        limit = self.max_entries
        while self._bytes > self.max_bytes or (limit is not None and len(self._entries) > limit):
            old, _ = self._entries.popitem(last=False)
            self._bytes -= self._sizes.pop(old)
