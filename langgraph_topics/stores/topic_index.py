"""Searchable indexes of topic briefs: Chroma (on disk or on a server), or numpy in memory.

Both embed with the :class:`~langgraph_topics.stores.protocols.Embedder` they are given and
never let Chroma embed anything: its default embedding function downloads an ONNX model on first
use, which fails offline.

Several worker processes share one index through a Chroma server (``chroma run``), reached by
URL with :func:`open_topic_index`; a single process keeps it in a local directory.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

import numpy as np
import numpy.typing as npt

from langgraph_topics.errors import InputError, ThreadBusyError, first_line
from langgraph_topics.stores.data_layout import index_directory
from langgraph_topics.stores.file_lock import FileLock
from langgraph_topics.stores.protocols import Embedder, TopicIndex
from langgraph_topics.stores.store_faults import index_fault, is_damage, nearly_full

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection
    from chromadb.base_types import InclusionExclusionOperator, LiteralValue, Where

logger = logging.getLogger(__name__)

OPEN_LOCK_FILE = ".open.lock"
OPEN_TIMEOUT_SECONDS = 120.0
DAMAGED_INDEX_PREFIX = "index.damaged-"
"""A damaged local topic index is moved to ``<data_dir>/index.damaged-<UTC time>/``."""

SERVER_CONNECT_SECONDS = 5.0
"""How long connecting to a Chroma server may take before the attempt fails."""
SERVER_READ_SECONDS = 30.0
"""How long a Chroma server may take to answer one request before the attempt fails."""
SERVER_ATTEMPTS = 3
"""Attempts of each server request that failed in transport (every index request is idempotent)."""
SERVER_RETRY_SECONDS = 0.25
"""Pause before the second attempt; it doubles before each later one."""

_T = TypeVar("_T")


def indexed_status(status: str) -> str:
    """What an index keeps of a topic's status: ``archived``, or ``active`` for the rest.

    Search leaves archived topics out and nothing else; keeping ``dormant`` too made every
    activation a write, and a Chroma update took 13–38 ms, more as the index grew (``bench
    soak``: a few a turn).
    """
    return "archived" if status == "archived" else "active"


def topic_document(name: str, brief: str) -> str:
    """Build the text embedded and stored for a topic (the name carries weight for short briefs)."""
    return f"{name}\n{brief}"


def stored_or_none(
    index: TopicIndex,
) -> Callable[[str, str], npt.NDArray[np.float32] | None]:
    """``index.document_vector`` that answers None when the index cannot be read.

    A stored vector only saves an embedding: a damaged or unreachable index (derived data,
    rebuilt from the topic files) must cost the caller that embedding, not its turn or split.
    """

    def stored(topic_id: str, document: str) -> npt.NDArray[np.float32] | None:
        try:
            return index.document_vector(topic_id, document)
        except Exception as error:  # the caller embeds the brief instead
            logger.debug("topic index vector of %s unavailable: %s", topic_id, first_line(error))
            return None

    return stored


def _clamp(similarity: float) -> float:
    return min(1.0, max(0.0, similarity))


@dataclass(frozen=True)
class ChromaEndpoint:
    """Where a Chroma server listens, parsed from a URL such as ``http://127.0.0.1:8000``."""

    host: str
    port: int
    ssl: bool

    @property
    def url(self) -> str:
        """The canonical URL (explicit port), the key of the per-process client cache."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.ssl else 'http'}://{host}:{self.port}"


def parse_chroma_url(url: str) -> ChromaEndpoint:
    """Parse a Chroma server URL: ``http[s]://host[:port]`` (port 80/443 when left out).

    Raises:
        InputError: The URL has another scheme, no host, a bad port, or parts a Chroma
            client cannot use (credentials, a path, a query).
    """
    text = url.strip()

    def bad(problem: str) -> InputError:
        return InputError(f"chroma_url {url!r}: {problem} (expected http://host:port)")

    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as error:
        raise bad(first_line(error)) from None
    if parts.scheme not in ("http", "https"):
        raise bad(f"scheme must be http or https, not {parts.scheme or 'missing'!r}")
    if not parts.hostname:
        raise bad("no host")
    if parts.username is not None or parts.password is not None:
        raise bad("credentials in the URL are not supported")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise bad("a path, query or fragment is not supported")
    ssl = parts.scheme == "https"
    return ChromaEndpoint(host=parts.hostname, port=port or (443 if ssl else 80), ssl=ssl)


_server_clients: dict[tuple[int, str], ClientAPI] = {}
_server_clients_lock = threading.Lock()


def server_client(url: str) -> ClientAPI:
    """The process's Chroma client of the server at ``url``, connected on first use.

    One client per server and process: each holds a pool of HTTP connections. The cache is
    keyed by process id too, so a worker forked after the parent connected opens its own
    connections instead of sharing the parent's sockets.

    Raises:
        InputError: The URL is malformed, or no Chroma server answers there.
    """
    endpoint = parse_chroma_url(url)
    key = (os.getpid(), endpoint.url)
    with _server_clients_lock:
        client = _server_clients.get(key)
        if client is None:
            client = _connect(url, endpoint)
            _server_clients[key] = client
        return client


def _connect(url: str, endpoint: ChromaEndpoint) -> ClientAPI:
    import chromadb
    import httpx
    from chromadb.config import Settings

    def unreachable(problem: str) -> InputError:
        return InputError(f"chroma_url {url!r}: no Chroma server answers ({problem})")

    # A heartbeat with timeouts first: Chroma's own client waits without limit, so a host
    # that drops packets would hang the worker instead of failing with this message.
    heartbeat = f"{endpoint.url}/api/v2/heartbeat"
    timeout = httpx.Timeout(SERVER_READ_SECONDS, connect=SERVER_CONNECT_SECONDS)
    try:
        response = _retrying(url, lambda: httpx.get(heartbeat, timeout=timeout))
    except ConnectionError as error:
        raise unreachable(first_line(error.__cause__ or error)) from None
    if response.status_code != 200:
        raise unreachable(f"GET {heartbeat} returned HTTP {response.status_code}; not Chroma?")
    try:
        client = chromadb.HttpClient(
            host=endpoint.host if ":" not in endpoint.host else f"[{endpoint.host}]",
            port=endpoint.port,
            ssl=endpoint.ssl,
            settings=Settings(anonymized_telemetry=False),
        )
    except Exception as error:  # Chroma wraps connection failures in ValueError and others
        raise unreachable(first_line(error)) from None
    # Bound every later request as well (see above); ``_session`` is Chroma's httpx client.
    session = getattr(getattr(client, "_server", None), "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = timeout
    else:  # pragma: no cover - a Chroma release that moved its session
        logger.warning("Chroma client without an httpx session: requests to %s are unbounded", url)
    return client


def _retrying(url: str, request: Callable[[], _T]) -> _T:
    """Run an idempotent request to the server at ``url``, again after a transport failure.

    Raises:
        ConnectionError: Every attempt failed in transport (one line naming the URL).
    """
    import httpx

    for attempt in range(1, SERVER_ATTEMPTS + 1):
        try:
            return request()
        except httpx.TransportError as error:
            if attempt == SERVER_ATTEMPTS:
                raise ConnectionError(
                    f"Chroma server {url}: {first_line(error)} ({attempt} attempts)"
                ) from error
            logger.debug("Chroma request failed (attempt %d): %s", attempt, first_line(error))
            time.sleep(SERVER_RETRY_SECONDS * 2 ** (attempt - 1))
    raise AssertionError("unreachable")  # pragma: no cover


def _server_url(chroma_url: str | None) -> str | None:
    """The Chroma server's URL; None when the indexes live under the data directory."""
    return chroma_url if chroma_url is not None and chroma_url.strip() else None


def _asked(chroma_url: str | None, request: Callable[[], _T]) -> _T:
    """``request`` of a local client, or of the server at ``chroma_url`` with its retries."""
    url = _server_url(chroma_url)
    return request() if url is None else _retrying(url, request)


def open_topic_index(
    data_dir: Path, chroma_url: str | None, embedder: Embedder, collection: str
) -> ChromaTopicIndex:
    """Open a thread's topic index: on the Chroma server at ``chroma_url``, or on disk.

    Args:
        data_dir: The memory's data directory; without a server the index lives in its
            ``index`` subdirectory.
        chroma_url: ``http[s]://host:port`` of a Chroma server shared by every worker;
            ``None`` (or blank) keeps the index local to this machine.
        embedder: Embeds briefs and queries (always here, never on the server).
        collection: The collection of the index (one per thread).

    Raises:
        InputError: ``chroma_url`` is malformed or no Chroma server answers there.
        ConnectionError: The server answered before but stopped answering (after retries).
    """
    url = _server_url(chroma_url)
    if url is None:
        return ChromaTopicIndex(index_directory(data_dir), embedder, collection=collection)
    return ChromaTopicIndex(None, embedder, collection=collection, server_url=url)


def _existing_client(data_dir: Path, chroma_url: str | None) -> ClientAPI | None:
    """The client of the topic indexes (``open_topic_index``'s); None: no local index yet."""
    url = _server_url(chroma_url)
    if url is not None:
        return server_client(url)
    path = index_directory(data_dir)
    if not path.is_dir():
        return None
    import chromadb
    from chromadb.config import Settings

    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


def collection_names(data_dir: Path, chroma_url: str | None) -> list[str]:
    """The names of every topic index collection (one per thread), creating nothing."""
    client = _existing_client(data_dir, chroma_url)
    if client is None:
        return []
    return sorted(c.name for c in _asked(chroma_url, lambda: list(client.list_collections())))


def drop_collection(data_dir: Path, chroma_url: str | None, name: str) -> None:
    """Delete a thread's whole topic index collection (nothing when there is none)."""
    if name not in collection_names(data_dir, chroma_url):
        return
    client = _existing_client(data_dir, chroma_url)
    assert client is not None
    _asked(chroma_url, lambda: client.delete_collection(name))
    # Other clients of this process would keep the dropped collection's copy.
    ChromaTopicIndex.reload_from_disk_next_time()


def set_aside_damaged_index(path: Path) -> Path:
    """Move a damaged local index's files out of ``path`` (its open lock stays), returning where.

    The lock file stays because other processes may be waiting on it.
    """
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    kept = path.parent / f"{DAMAGED_INDEX_PREFIX}{stamp}-{os.getpid()}"
    kept.mkdir(parents=True, exist_ok=True)
    for entry in path.iterdir():
        if not entry.name.startswith(OPEN_LOCK_FILE):
            entry.rename(kept / entry.name)
    return kept


def _get_or_create(client: ClientAPI, collection: str) -> Collection:
    # embedding_function=None stores no function in the collection's configuration, so a
    # later process reopens it without Chroma trying to build (and download) its own.
    return client.get_or_create_collection(
        collection,
        embedding_function=None,
        configuration={"hnsw": {"space": "cosine"}},
    )


class ChromaTopicIndex:
    """Topic index on a Chroma collection (cosine space, caller-side embeddings).

    The collection lives in a local persistent database at ``path``, or on the Chroma server
    at ``server_url`` (give exactly one), where every worker sees the others' writes.

    Args:
        path: Directory of a local Chroma database; created if missing.
        embedder: Embeds briefs and queries. Keep it the same across runs: the collection's
            dimension is fixed by the first vector stored.
        collection: Collection name (3-512 characters of ``[a-zA-Z0-9._-]``).
        server_url: ``http[s]://host:port`` of a Chroma server (``chroma run``) instead.

    Raises:
        InputError: Both or neither of ``path`` and ``server_url`` given, a malformed
            ``server_url``, or no server answering there.

    Chroma allows one settings object per path and process: open the same ``path`` elsewhere
    in the process only through this class (or with ``anonymized_telemetry=False``). Requests
    to a server that fail in transport are retried (each is idempotent), then raise a
    ``ConnectionError`` naming the server.
    """

    def __init__(
        self,
        path: Path | None,
        embedder: Embedder,
        collection: str = "topic_briefs",
        *,
        server_url: str | None = None,
    ) -> None:
        if (path is None) == (server_url is None):
            raise InputError("ChromaTopicIndex: give either a path or a server_url")
        self.path = None if path is None else Path(path)
        self.server_url = server_url
        self.embedder = embedder
        self._lock = threading.Lock()
        if self.path is not None:
            self._collection = self._open_local(self.path, collection)
        else:
            assert server_url is not None
            client = server_client(server_url)
            self._collection = self._request(lambda: _get_or_create(client, collection))
        self._space = self._read_space()

    @staticmethod
    def _open_local(path: Path, collection: str) -> Collection:
        # Imported here: chromadb takes over a second to import, which dry runs and the
        # in-memory index should not pay.
        import chromadb
        from chromadb.config import Settings

        path.mkdir(parents=True, exist_ok=True)
        # Chroma creates its tables when a process first opens a new database; two processes
        # doing so at once fail ("table collections already exists"), so opening is serialised.
        opening = FileLock(path / OPEN_LOCK_FILE)
        if not opening.acquire(OPEN_TIMEOUT_SECONDS):
            raise ThreadBusyError(f"{path}: the topic index stayed locked by another process")

        def open_collection() -> Collection:
            client = chromadb.PersistentClient(
                path=str(path), settings=Settings(anonymized_telemetry=False)
            )
            return _get_or_create(client, collection)

        try:
            try:
                return open_collection()
            except BaseException as error:  # a Rust panic is a BaseException
                if not is_damage(error):
                    if isinstance(error, Exception) and not isinstance(error, InputError):
                        raise index_fault(error, path) from error
                    raise
                # Derived data: the topic files hold everything it indexes (``mend_topic_index``
                # fills it again as each thread is opened), so it is set aside, not repaired.
                kept = set_aside_damaged_index(path)
                logger.warning(
                    "%s: the topic index was damaged (%s); it is rebuilt from the topic files "
                    "(the damaged copy is kept in %s)",
                    path,
                    first_line(error),
                    kept,
                )
                ChromaTopicIndex.reload_from_disk_next_time()
                return open_collection()
        finally:
            opening.release()

    def _request(self, request: Callable[[], _T]) -> _T:
        """Run a request on the collection: retried after transport failures on a server."""
        if self.server_url is None:
            return request()
        return _retrying(self.server_url, request)

    def _write(self, request: Callable[[], _T]) -> _T:
        """Run a request that writes; a local index on a nearly full disk is not written.

        On a full disk Chroma's core sometimes raises and sometimes waits forever inside the
        write (a chat on a full 4 MB tmpfs hung in ``upsert``), and a hung write would hold the
        turn, or the background split a closing memory waits for, for good. A look at the free
        space (a ``statvfs``, microseconds, only before a write) turns that into the one-line
        disk-full error the failure would have given.
        """
        if self.path is not None and nearly_full(self.path):
            full = OSError(errno.ENOSPC, "no space left on device", str(self.path))
            raise index_fault(full, self.path)
        return self._request(request)

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
        document = topic_document(name, brief)
        embeddings = np.asarray(self.embedder.embed([document]), dtype=np.float32)
        with self._lock:
            self._write(
                lambda: self._collection.upsert(
                    ids=[topic_id],
                    embeddings=embeddings,
                    documents=[document],
                    metadatas=[{"status": indexed_status(status)}],
                )
            )

    def set_status(self, topic_id: str, status: str, *, previous: str | None = None) -> None:
        """Record whether a topic is archived; a topic not in the index is ignored.

        Written only when that changes (``indexed_status``). With ``previous`` kept alike
        (waking a dormant topic, putting an active one to sleep: a few times a turn) the index
        is not even read: a Chroma ``get`` took 8–12% of a turn at 6,000 turns of the soak.
        """
        kept = indexed_status(status)
        if previous is not None and indexed_status(previous) == kept:
            return
        with self._lock:
            found = self._request(
                lambda: self._collection.get(ids=[topic_id], include=["metadatas"])
            )
            if not found["ids"]:
                logger.debug("set_status on unindexed topic %s ignored", topic_id)
                return
            metadatas = found["metadatas"] or []
            held = metadatas[0].get("status") if metadatas and metadatas[0] else None
            if held == kept:
                return
            # Another worker may remove the topic in between: Chroma ignores updates of
            # unknown ids, so the race costs nothing.
            self._write(
                lambda: self._collection.update(ids=[topic_id], metadatas=[{"status": kept}])
            )

    def search(
        self, query: str, *, k: int, exclude_status: Sequence[str] = ("archived",)
    ) -> list[tuple[str, float]]:
        """Topics most similar to the query as ``(topic_id, similarity in [0, 1])``, best first.

        Args:
            query: Free text, any language the embedder handles.
            k: At most this many results (fewer when fewer topics match).
            exclude_status: Statuses to leave out, as the index keeps them
                (``indexed_status``: ``archived`` or ``active``).
        """
        if k <= 0:
            return []
        with self._lock:
            total = self._request(self._collection.count)
        if total == 0:
            return []
        embeddings = np.asarray(self.embedder.embed([query]), dtype=np.float32)
        excluded: list[LiteralValue] = list(dict.fromkeys(exclude_status))
        # Chroma rejects an empty $nin list, so no exclusions means no filter at all.
        where: Where | None = None
        if excluded:
            condition: dict[InclusionExclusionOperator, list[LiteralValue]] = {"$nin": excluded}
            where = {"status": condition}
        # A server answers with fewer hits when another worker removed topics since the count.
        with self._lock:
            result = self._request(
                lambda: self._collection.query(
                    query_embeddings=embeddings,
                    n_results=min(k, total),
                    where=where,
                    include=["distances"],
                )
            )
        ids = result["ids"][0] if result["ids"] else []
        distances = result["distances"][0] if result["distances"] else []
        hits = [
            (topic_id, self._similarity(float(distance)))
            for topic_id, distance in zip(ids, distances, strict=True)
        ]
        if len(hits) < min(k, total):
            hits = self._completed(hits, embeddings[0], where)
        hits.sort(key=lambda hit: -hit[1])
        return hits[:k]

    def _completed(
        self,
        hits: list[tuple[str, float]],
        query: np.ndarray[Any, np.dtype[np.float32]],
        where: Where | None,
    ) -> list[tuple[str, float]]:
        """``hits`` with every matching topic the vector search left out, scored exactly.

        Asked for at least as many topics as match, the approximate (HNSW) search can still
        answer with fewer: a node its graph no longer reaches, a vector index behind the
        collection's records. A topic it never returns could never be activated again, so the
        topics it left out are scored here from their stored vectors (their documents embedded
        again where none is stored). Fewer hits because the filter matched fewer is no fault.
        """
        with self._lock:
            found = self._request(
                lambda: self._collection.get(where=where, include=["documents", "embeddings"])
            )
        returned = {topic_id for topic_id, _ in hits}
        stored = found["embeddings"]
        documents = found["documents"] or []
        left_out = [
            (topic_id, None if stored is None else stored[place], documents[place] or "")
            for place, topic_id in enumerate(found["ids"])
            if topic_id not in returned
        ]
        if not left_out:
            return hits
        logger.warning(
            "topic index %s: the vector search returned %d of %d matching topics; "
            "the other %d are scored exactly",
            self._collection.name,
            len(hits),
            len(hits) + len(left_out),
            len(left_out),
        )
        unembedded = [document for _, vector, document in left_out if vector is None]
        fresh = iter(np.asarray(self.embedder.embed(unembedded), dtype=np.float32))
        vectors = np.stack(
            [
                np.asarray(vector, dtype=np.float32) if vector is not None else next(fresh)
                for _, vector, _ in left_out
            ]
        )
        # Vectors are unit length: the dot product is the cosine the search would have given.
        scores = vectors @ np.asarray(query, dtype=np.float32)
        return hits + [
            (topic_id, _clamp(float(score)))
            for (topic_id, _, _), score in zip(left_out, scores, strict=True)
        ]

    def remove(self, topic_id: str) -> None:
        """Remove a topic from the index (unknown ids are ignored)."""
        with self._lock:
            self._write(lambda: self._collection.delete(ids=[topic_id]))

    def count(self) -> int:
        """Return the number of indexed topics."""
        with self._lock:
            return int(self._request(self._collection.count))

    def document_vector(self, topic_id: str, document: str) -> npt.NDArray[np.float32] | None:
        """The vector indexed for ``topic_id`` if its indexed text is exactly ``document``."""
        with self._lock:
            found = self._request(
                lambda: self._collection.get(ids=[topic_id], include=["documents", "embeddings"])
            )
        documents = found["documents"] or []
        embeddings = found["embeddings"]
        if not documents or documents[0] != document or embeddings is None or not len(embeddings):
            return None
        return np.asarray(embeddings[0], dtype=np.float32)

    def entries(self) -> dict[str, tuple[str, str]]:
        """Every indexed topic: topic id → (the embedded document, its status)."""
        with self._lock:
            found = self._request(lambda: self._collection.get(include=["documents", "metadatas"]))
        documents = found["documents"] or []
        metadatas = found["metadatas"] or []
        return {
            topic_id: (document or "", str((metadata or {}).get("status", "active")))
            for topic_id, document, metadata in zip(found["ids"], documents, metadatas, strict=True)
        }

    @staticmethod
    def reload_from_disk_next_time() -> None:
        """Make the next index opened in this process read its collection from disk again.

        Chroma keeps one client system per path and process, with each collection's vector
        index in memory, and hands it to every client opened later. Once another process has
        written a collection, that copy is stale (a query then fails with "Error finding id");
        dropping the cache gives the next client a fresh system. Indexes already open keep the
        system they were opened with. Indexes on a server need none of this (the server holds
        the only copy) and keep working: their clients hold their own connections.
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
        document = topic_document(name, brief)
        vector = np.asarray(self.embedder.embed([document])[0], dtype=np.float32)
        with self._lock:
            self._entries[topic_id] = (vector, document, indexed_status(status))

    def set_status(self, topic_id: str, status: str, *, previous: str | None = None) -> None:
        """Record whether a topic is archived; a topic not in the index is ignored."""
        with self._lock:
            entry = self._entries.get(topic_id)
            if entry is not None:
                self._entries[topic_id] = (entry[0], entry[1], indexed_status(status))

    def search(
        self, query: str, *, k: int, exclude_status: Sequence[str] = ("archived",)
    ) -> list[tuple[str, float]]:
        """Topics most similar to the query as ``(topic_id, similarity in [0, 1])``, best first.

        Args:
            query: Free text, any language the embedder handles.
            k: At most this many results (fewer when fewer topics match).
            exclude_status: Statuses to leave out, as the index keeps them
                (``indexed_status``: ``archived`` or ``active``).
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

    def document_vector(self, topic_id: str, document: str) -> npt.NDArray[np.float32] | None:
        """The vector indexed for ``topic_id`` if its indexed text is exactly ``document``."""
        with self._lock:
            entry = self._entries.get(topic_id)
        return entry[0] if entry is not None and entry[1] == document else None

    def count(self) -> int:
        """Return the number of indexed topics."""
        with self._lock:
            return len(self._entries)
