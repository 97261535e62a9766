"""Searchable indexes of topic briefs: Chroma on disk, or numpy in memory for tests and dry runs.

Both embed with the :class:`~langgraph_topics.stores.protocols.Embedder` they are given and
never let Chroma embed anything: its default embedding function downloads an ONNX model on first
use, which fails offline.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from langgraph_topics.errors import ThreadBusyError
from langgraph_topics.stores.file_lock import FileLock
from langgraph_topics.stores.protocols import Embedder

if TYPE_CHECKING:
    from chromadb.base_types import InclusionExclusionOperator, LiteralValue, Where

logger = logging.getLogger(__name__)

OPEN_LOCK_FILE = ".open.lock"
OPEN_TIMEOUT_SECONDS = 120.0


def _document(name: str, brief: str) -> str:
    """Build the text embedded and stored for a topic (the name carries weight for short briefs)."""
    return f"{name}\n{brief}"


def _clamp(similarity: float) -> float:
    return min(1.0, max(0.0, similarity))


class ChromaTopicIndex:
    """Topic index on a persistent Chroma collection (cosine space, caller-side embeddings).

    Args:
        path: Directory of the Chroma database; created if missing.
        embedder: Embeds briefs and queries. Keep it the same across runs: the collection's
            dimension is fixed by the first vector stored.
        collection: Collection name (3-512 characters of ``[a-zA-Z0-9._-]``).

    Chroma allows one settings object per path and process: open the same ``path`` elsewhere
    in the process only through this class (or with ``anonymized_telemetry=False``).
    """

    def __init__(self, path: Path, embedder: Embedder, collection: str = "topic_briefs") -> None:
        # Imported here: chromadb takes over a second to import, which dry runs and the
        # in-memory index should not pay.
        import chromadb
        from chromadb.config import Settings

        self.path = Path(path)
        self.embedder = embedder
        self.path.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # Chroma creates its tables when a process first opens a new database; two processes
        # doing so at once fail ("table collections already exists"), so opening is serialised.
        opening = FileLock(self.path / OPEN_LOCK_FILE)
        if not opening.acquire(OPEN_TIMEOUT_SECONDS):
            raise ThreadBusyError(f"{self.path}: the topic index stayed locked by another process")
        try:
            self._client = chromadb.PersistentClient(
                path=str(self.path), settings=Settings(anonymized_telemetry=False)
            )
            # embedding_function=None stores no function in the collection's configuration, so
            # a later process reopens it without Chroma trying to build (and download) its own.
            self._collection = self._client.get_or_create_collection(
                collection,
                embedding_function=None,
                configuration={"hnsw": {"space": "cosine"}},
            )
        finally:
            opening.release()
        self._space = self._read_space()

    def _read_space(self) -> str:
        """Read the distance space the collection was created with.

        The configuration passed above only applies to new collections; one made elsewhere
        keeps its own, and similarities must follow it.
        """
        config: Mapping[str, Any] = self._collection.configuration_json or {}
        for key in ("hnsw", "spann"):
            section = config.get(key)
            if isinstance(section, Mapping) and isinstance(section.get("space"), str):
                return str(section["space"])
        return "cosine"

    def _similarity(self, distance: float) -> float:
        # Vectors are unit length, so every space maps back onto cosine similarity.
        if self._space == "l2":
            return _clamp(1.0 - distance / 2.0)  # Chroma's l2 is squared: 2 - 2·cos
        return _clamp(1.0 - distance)  # cosine: 1 - cos; ip: 1 - dot

    def upsert(self, topic_id: str, name: str, brief: str, *, status: str) -> None:
        """Add or replace a topic's brief (embedded together with its name)."""
        document = _document(name, brief)
        embeddings = np.asarray(self.embedder.embed([document]), dtype=np.float32)
        with self._lock:
            self._collection.upsert(
                ids=[topic_id],
                embeddings=embeddings,
                documents=[document],
                metadatas=[{"status": status}],
            )

    def set_status(self, topic_id: str, status: str) -> None:
        """Record a topic's status; a topic not in the index is ignored."""
        with self._lock:
            if not self._collection.get(ids=[topic_id], include=[])["ids"]:
                logger.debug("set_status on unindexed topic %s ignored", topic_id)
                return
            self._collection.update(ids=[topic_id], metadatas=[{"status": status}])

    def search(
        self, query: str, *, k: int, exclude_status: Sequence[str] = ("archived",)
    ) -> list[tuple[str, float]]:
        """Topics most similar to the query as ``(topic_id, similarity in [0, 1])``, best first.

        Args:
            query: Free text, any language the embedder handles.
            k: At most this many results (fewer when fewer topics match).
            exclude_status: Statuses to leave out.
        """
        if k <= 0:
            return []
        with self._lock:
            total = self._collection.count()
        if total == 0:
            return []
        embeddings = np.asarray(self.embedder.embed([query]), dtype=np.float32)
        excluded: list[LiteralValue] = list(dict.fromkeys(exclude_status))
        # Chroma rejects an empty $nin list, so no exclusions means no filter at all.
        where: Where | None = None
        if excluded:
            condition: dict[InclusionExclusionOperator, list[LiteralValue]] = {"$nin": excluded}
            where = {"status": condition}
        with self._lock:
            result = self._collection.query(
                query_embeddings=embeddings,
                n_results=min(k, total),
                where=where,
                include=["distances"],
            )
        ids = result["ids"][0] if result["ids"] else []
        distances = result["distances"][0] if result["distances"] else []
        hits = [
            (topic_id, self._similarity(float(distance)))
            for topic_id, distance in zip(ids, distances, strict=True)
        ]
        hits.sort(key=lambda hit: -hit[1])
        return hits

    def remove(self, topic_id: str) -> None:
        """Remove a topic from the index (unknown ids are ignored)."""
        with self._lock:
            self._collection.delete(ids=[topic_id])

    def count(self) -> int:
        """Return the number of indexed topics."""
        with self._lock:
            return int(self._collection.count())

    @staticmethod
    def reload_from_disk_next_time() -> None:
        """Make the next index opened in this process read its collection from disk again.

        Chroma keeps one client system per path and process, with each collection's vector
        index in memory, and hands it to every client opened later. Once another process has
        written a collection, that copy is stale (a query then fails with "Error finding id");
        dropping the cache gives the next client a fresh system. Indexes already open keep the
        system they were opened with.
        """
        from chromadb.api.shared_system_client import SharedSystemClient

        SharedSystemClient.clear_system_cache()


class InMemoryTopicIndex:
    """The same index kept in memory with numpy: no persistence, for tests and dry runs.

    Args:
        embedder: Embeds briefs and queries.
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._lock = threading.Lock()
        # Insertion-ordered, so ties in similarity break the same way on every run.
        self._entries: dict[str, tuple[np.ndarray[Any, np.dtype[np.float32]], str, str]] = {}

    def upsert(self, topic_id: str, name: str, brief: str, *, status: str) -> None:
        """Add or replace a topic's brief (embedded together with its name)."""
        document = _document(name, brief)
        vector = np.asarray(self.embedder.embed([document])[0], dtype=np.float32)
        with self._lock:
            self._entries[topic_id] = (vector, document, status)

    def set_status(self, topic_id: str, status: str) -> None:
        """Record a topic's status; a topic not in the index is ignored."""
        with self._lock:
            entry = self._entries.get(topic_id)
            if entry is not None:
                self._entries[topic_id] = (entry[0], entry[1], status)

    def search(
        self, query: str, *, k: int, exclude_status: Sequence[str] = ("archived",)
    ) -> list[tuple[str, float]]:
        """Topics most similar to the query as ``(topic_id, similarity in [0, 1])``, best first.

        Args:
            query: Free text, any language the embedder handles.
            k: At most this many results (fewer when fewer topics match).
            exclude_status: Statuses to leave out.
        """
        if k <= 0:
            return []
        excluded = set(exclude_status)
        with self._lock:
            candidates = [
                (topic_id, vector)
                for topic_id, (vector, _, status) in self._entries.items()
                if status not in excluded
            ]
        if not candidates:
            return []
        query_vector = np.asarray(self.embedder.embed([query])[0], dtype=np.float32)
        matrix = np.stack([vector for _, vector in candidates])
        scores = matrix @ query_vector
        # Rank on the raw scores, as Chroma does on distances, so that topics clamped to the
        # same 0 keep the same order in both indexes.
        order = sorted(range(len(candidates)), key=lambda i: -float(scores[i]))[:k]
        return [(candidates[i][0], _clamp(float(scores[i]))) for i in order]

    def remove(self, topic_id: str) -> None:
        """Remove a topic from the index (unknown ids are ignored)."""
        with self._lock:
            self._entries.pop(topic_id, None)

    def count(self) -> int:
        """Return the number of indexed topics."""
        with self._lock:
            return len(self._entries)
