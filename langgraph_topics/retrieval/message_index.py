"""The per-thread retrieval index: every split message embedded and counted once (seed 004 §3).

History is indexed when it is split, beside the topic files, so no turn and no restart embeds
it again and a search over a whole thread is one matrix product and one BM25 pass::

    retrieval/meta.json       # {"dim": 512, "embedder": "UseEmbedder"}
    retrieval/vectors.f16     # one float16 row per message, in the order of entries.jsonl
    retrieval/entries.jsonl   # {"id", "topic", "time"} per message, in split order

Split order is conversation order (a split moves the oldest unsplit messages), so neighbours in
the index are neighbours in the conversation. Both files are append-only; vectors are written
before their entries, and on open the two are cut to the rows they both hold, so a crash
between them costs at most the re-embedding of the messages of that one split.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from langgraph_topics.retrieval.bm25 import BM25
from langgraph_topics.retrieval.lexical import lexical_terms
from langgraph_topics.roles.native.text import indexed_text
from langgraph_topics.roles.native.vectors import Matrix, embed_matrix
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.durable import append_durably, replace_durably
from langgraph_topics.stores.protocols import Embedder, TopicStore

log = logging.getLogger(__name__)

_TOKENS = itertools.count(1)
META_FILE = "meta.json"
VECTORS_FILE = "vectors.f16"
ENTRIES_FILE = "entries.jsonl"
_BYTES_PER_VALUE = 2
SUPERSEDED_GROUP = "~superseded"
"""The group of a row whose message was indexed again under another topic (a split made again
after a crash, or on another branch): no topic reads it, so it counts for none."""


def embedder_name(embedder: Embedder) -> str:
    """A name telling embedders apart, so an index built by another one is rebuilt."""
    return str(getattr(embedder, "name", type(embedder).__name__))


def message_time(message: StoredMessage) -> float | None:
    """A message's timestamp in seconds (None when it has none or it is unreadable)."""
    stamp = message.get("timestamp")
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None


@dataclass(frozen=True)
class Snapshot:
    """A consistent view of an index for one search."""

    count: int
    """Messages in this view (later appends do not show)."""
    topic_names: list[str]
    """Topic ids by code."""
    codes: npt.NDArray[np.int64]
    """Each message's topic code (an index into ``topic_names``)."""
    times: npt.NDArray[np.float64]
    """Each message's time in seconds (NaN when unknown)."""
    vectors: Matrix
    lexical: BM25


class MessageIndex:
    """Embeddings and lexical statistics of a thread's split messages, in conversation order.

    Thread-safe; reads return snapshots that later appends do not change.

    Args:
        root: The directory of the index files (``None``: in memory only, for dry runs).
        embedder: Embeds message texts (the same one must embed queries).
    """

    def __init__(self, root: Path | None, embedder: Embedder) -> None:
        self.root = root
        self.embedder = embedder
        self.token = next(_TOKENS)
        """Tells this index apart from every other one of the process (cache keys)."""
        self.ids: list[str] = []
        self.topics: list[str] = []
        self.times: list[float | None] = []
        self.position: dict[str, int] = {}
        self.lexical = BM25()
        self.code_of: dict[str, int] = {}
        """A small integer per topic id, so a search groups by integers, not strings."""
        self.topic_names: list[str] = []
        self._vectors: Matrix = np.zeros((0, 0), dtype=np.float32)
        self._rows: list[Matrix] = []
        self._arrays: tuple[int, npt.NDArray[np.int64], npt.NDArray[np.float64]] | None = None
        self._lock = threading.RLock()
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)
            self._load()

    def __len__(self) -> int:
        with self._lock:
            return len(self.ids)

    # ------------------------------------------------------------------------------ writing

    def add(self, messages: Sequence[StoredMessage], topic_ids: Sequence[str]) -> None:
        """Index messages (in conversation order) with the topic each went to.

        Ids already indexed under the same topic are skipped, so re-adding after a crash is
        harmless; an id indexed under another topic gets a new row that supersedes the old.
        """
        with self._lock:
            fresh = [
                (m, t)
                for m, t in zip(messages, topic_ids, strict=True)
                if m["id"] not in self.position or self.topics[self.position[m["id"]]] != t
            ]
            if not fresh:
                return
            vectors = embed_matrix(self.embedder, [indexed_text(m) or " " for m, _ in fresh])
            if self.root is not None:
                self._write(fresh, vectors)
            for (message, topic_id), vector in zip(fresh, vectors, strict=True):
                self._remember(message["id"], topic_id, message_time(message), message, vector)

    def _remember(
        self,
        message_id: str,
        topic_id: str,
        time: float | None,
        message: StoredMessage | None,
        vector: Matrix,
    ) -> None:
        self._supersede(message_id)
        self.position[message_id] = len(self.ids)
        self.ids.append(message_id)
        self._note_topic(topic_id)
        self.times.append(time)
        self.lexical.add(lexical_terms(indexed_text(message)))
        self._rows.append(np.asarray(vector, dtype=np.float32).reshape(1, -1))

    def _supersede(self, message_id: str) -> None:
        """Take an earlier row of the message out of its topic (a newer row replaces it)."""
        earlier = self.position.get(message_id)
        if earlier is not None:
            self.topics[earlier] = SUPERSEDED_GROUP
            self._note_topic(SUPERSEDED_GROUP, append=False)
            self._arrays = None

    def _note_topic(self, topic_id: str, *, append: bool = True) -> None:
        if append:
            self.topics.append(topic_id)
        if topic_id not in self.code_of:
            self.code_of[topic_id] = len(self.topic_names)
            self.topic_names.append(topic_id)

    def _write(self, fresh: Sequence[tuple[StoredMessage, str]], vectors: Matrix) -> None:
        assert self.root is not None
        meta_path = self.root / META_FILE
        if not meta_path.exists():
            meta = {"dim": int(vectors.shape[1]), "embedder": embedder_name(self.embedder)}
            replace_durably(meta_path, json.dumps(meta).encode("utf-8"))
        append_durably(self.root / VECTORS_FILE, np.asarray(vectors, dtype=np.float16).tobytes())
        lines = "".join(
            json.dumps({"id": m["id"], "topic": t, "time": message_time(m)}) + "\n"
            for m, t in fresh
        )
        append_durably(self.root / ENTRIES_FILE, lines.encode("utf-8"))

    # ------------------------------------------------------------------------------ reading

    def vectors(self) -> Matrix:
        """All message vectors as one ``(n, d)`` float32 matrix (built once per growth)."""
        with self._lock:
            if self._rows:
                parts = [self._vectors] if len(self._vectors) else []
                self._vectors = np.concatenate([*parts, *self._rows]).astype(np.float32)
                self._rows = []
            return self._vectors

    def snapshot(self) -> Snapshot:
        """Everything a search reads, consistent with itself (later appends do not show)."""
        with self._lock:
            vectors = self.vectors()
            count = len(self.ids)
            if self._arrays is None or self._arrays[0] != count:
                codes = np.fromiter((self.code_of[t] for t in self.topics), np.int64, count)
                times = np.fromiter(
                    (np.nan if t is None else t for t in self.times), np.float64, count
                )
                self._arrays = (count, codes, times)
            return Snapshot(
                count=count,
                topic_names=list(self.topic_names),
                codes=self._arrays[1],
                times=self._arrays[2],
                vectors=vectors,
                lexical=self.lexical,
            )

    # ------------------------------------------------------------------------------ loading

    def _load(self) -> None:
        assert self.root is not None
        meta_path = self.root / META_FILE
        if not meta_path.exists():
            return
        try:
            meta = json.loads(meta_path.read_text("utf-8"))
            dim = int(meta["dim"])
        except (ValueError, KeyError, TypeError):
            log.warning("%s: unreadable; the index will be rebuilt", meta_path)
            self._reset_files()
            return
        if meta.get("embedder") != embedder_name(self.embedder):
            log.warning(
                "%s: built by %s, now %s; the index will be rebuilt",
                self.root,
                meta.get("embedder"),
                embedder_name(self.embedder),
            )
            self._reset_files()
            return
        entries = _read_entries(self.root / ENTRIES_FILE)
        raw = _read_bytes(self.root / VECTORS_FILE)
        row_bytes = dim * _BYTES_PER_VALUE
        rows = min(len(entries), len(raw) // row_bytes)
        if rows < len(entries) or rows * row_bytes < len(raw):
            log.warning("%s: cut to %d complete rows (crash during a write?)", self.root, rows)
            _truncate(self.root / VECTORS_FILE, rows * row_bytes)
            _rewrite_entries(self.root / ENTRIES_FILE, entries[:rows])
        matrix = np.frombuffer(raw[: rows * row_bytes], dtype=np.float16).reshape(rows, dim)
        self._vectors = matrix.astype(np.float32)
        for entry in entries[:rows]:
            self._supersede(entry["id"])
            self.position[entry["id"]] = len(self.ids)
            self.ids.append(entry["id"])
            self._note_topic(entry["topic"])
            self.times.append(entry["time"])

    def attach_lexical(self, store: TopicStore) -> None:
        """Rebuild the lexical statistics from the topic store's text after opening.

        Only terms are recomputed (a regex pass, no model): the embeddings are what is costly,
        and those are read back from disk.
        """
        with self._lock:
            if not self.ids:
                return
            found = store.get_messages(self.ids)
            self.lexical = BM25(lexical_terms(indexed_text(found.get(i))) for i in self.ids)

    def _reset_files(self) -> None:
        assert self.root is not None
        for name in (META_FILE, VECTORS_FILE, ENTRIES_FILE):
            (self.root / name).unlink(missing_ok=True)


def open_message_index(root: Path, embedder: Embedder, store: TopicStore) -> MessageIndex:
    """Open a thread's index and bring it level with its topic store.

    Messages the store holds but the index lacks (a crash between the two writes, or an index
    built by another embedder) are embedded now, in conversation order; nothing else is.
    """
    index = MessageIndex(root, embedder)
    located = store.message_ids()
    stale = [i for i in index.ids if i not in located]
    if stale:
        log.warning("%s: %d indexed messages are in no topic; rebuilding", root, len(stale))
        index._reset_files()
        index = MessageIndex(root, embedder)
    index.attach_lexical(store)
    missing = [m for m in store.transcript() if m["id"] not in index.position]
    if missing:
        log.info("%s: indexing %d messages not yet indexed", root, len(missing))
        index.add(missing, [located[m["id"]] for m in missing])
    return index


class OverlayMessageIndex(MessageIndex):
    """A base index plus messages indexed in memory only (a dry run's split)."""

    def __init__(self, base: MessageIndex) -> None:
        super().__init__(None, base.embedder)
        self.base = base
        self.terms: list[tuple[str, ...]] = []
        """Lexical terms of this view's messages (scored on the base's statistics)."""

    def add(self, messages: Sequence[StoredMessage], topic_ids: Sequence[str]) -> None:
        """Index in memory, leaving the base as it is."""
        with self._lock:
            fresh = [
                (m, t)
                for m, t in zip(messages, topic_ids, strict=True)
                if m["id"] not in self.base.position and m["id"] not in self.position
            ]
            if fresh:
                super().add([m for m, _ in fresh], [t for _, t in fresh])
                self.terms.extend(lexical_terms(indexed_text(m)) for m, _ in fresh)


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def _read_entries(path: Path) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for number, line in enumerate(_read_bytes(path).split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            entry: dict[str, Any] = {"id": str(record["id"]), "topic": str(record["topic"])}
            time = record.get("time")
            entry["time"] = float(time) if isinstance(time, int | float) else None
        except (ValueError, KeyError, TypeError):
            log.warning("%s:%d: unreadable entry; the rest of the file is re-indexed", path, number)
            break
        entries.append(entry)
    return entries


def _truncate(path: Path, size: int) -> None:
    with path.open("r+b") as handle:
        handle.truncate(size)
        handle.flush()
        os.fsync(handle.fileno())


def _rewrite_entries(path: Path, entries: Sequence[dict[str, Any]]) -> None:
    replace_durably(path, "".join(json.dumps(e) + "\n" for e in entries).encode("utf-8"))
