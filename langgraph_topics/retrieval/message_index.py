"""The per-thread retrieval index: every split message embedded and counted once (seed 004 §3).

History is indexed when it is split, beside the topic files, so no turn and no restart embeds
it again and a search over a whole thread is one matrix product and one BM25 pass::

    retrieval/meta.json       # {"dim": 512, "embedder": "UseEmbedder"}
    retrieval/vectors.f16     # one float16 row per message, in the order of entries.jsonl
    retrieval/lexicon.txt, postings.i32, documents.i32   # BM25 terms per message (lexical_files)
    retrieval/projection.npz, shadows.f16   # from 20,000 messages on (projection)
    retrieval/entries.jsonl   # {"id", "topic", "time"} per message, in split order
    retrieval/entries.decoded # the same, as read, so an open decodes few lines (index_entries)
    retrieval/rekeyed.jsonl   # {"topic", "rows", "ids"}: rows filed under another topic since

Split order is conversation order (a split moves the oldest unsplit messages), so neighbours in
the index are neighbours in the conversation. Every file is append-only; vectors and terms are
written before their entries, and on open all are cut to the rows they all hold, so a crash
between them costs at most the re-embedding of the messages of that one split. Opening reads
these files and nothing else: no message text, no tokenising.

A topic split into subtopics (``stores/subtopics``) moves no message, and the index re-embeds
none: :meth:`MessageIndex.reassign` files rows under another topic by appending one compact line
per topic to ``rekeyed.jsonl``, applied on open after the entries (a torn last line is cut, and
what it would have said is mended against the store by :func:`open_message_index`).
"""

from __future__ import annotations

import itertools
import json
import logging
import mmap
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt

from langgraph_topics.retrieval.bm25 import BM25
from langgraph_topics.retrieval.index_entries import EntriesFile
from langgraph_topics.retrieval.lexical import lexical_terms
from langgraph_topics.retrieval.lexical_files import LexicalFiles
from langgraph_topics.retrieval.mapped_arrays import mapped_empty
from langgraph_topics.retrieval.ordinary_pages import ordinary_pages
from langgraph_topics.retrieval.projection import LARGE_INDEX, Projection, ProjectionFiles
from langgraph_topics.retrieval.row_dots import picked_row_dots
from langgraph_topics.roles.native.text import indexed_text
from langgraph_topics.roles.native.vectors import Matrix, Vector, embed_matrix
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.durable import (
    append_durably,
    remove_file,
    replace_durably,
    truncate_durably,
)
from langgraph_topics.stores.jsonl_lines import decode_lines
from langgraph_topics.stores.protocols import Embedder, TopicStore

log = logging.getLogger(__name__)

_TOKENS = itertools.count(1)
Vectors = npt.NDArray[np.float32] | npt.NDArray[np.float16]
META_FILE = "meta.json"
VECTORS_FILE = "vectors.f16"
ENTRIES_FILE = "entries.jsonl"
REKEYED_FILE = "rekeyed.jsonl"
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


WIDEN_IN_BACKGROUND = True
"""Whether :meth:`MessageIndex.widen` starts the thread that converts a large index's
vectors to float32 (tests turn it off to keep the float16 route)."""
_WIDEN_ROWS = 4096
"""Rows converted at a time by :meth:`MessageIndex.widen`'s thread (numpy's cast releases the
GIL for each)."""


GROWTH_DIVISOR = 4
"""The vectors' matrix grows by a quarter when full: doubling left up to half of it unused,
40 MB of a 20,000-message thread's resident memory (``bench soak``); each growth copies the
rows, a few milliseconds at that size, once per quarter of growth."""


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
    vectors: Vectors
    """float32, or float16 for an index opened large (see :meth:`MessageIndex.vectors`)."""
    lexical: BM25
    projection: Projection | None = None
    """The vectors' low-dimensional shadows, from ``LARGE_INDEX`` messages on."""

    def exact_dots(
        self, rows: npt.NDArray[np.int64], query: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.float32]:
        """The query's dot product with some rows of ``vectors``, float16 ones converted."""
        return picked_row_dots(self.vectors, rows, query)


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
        """Tells this index apart from every other one of the process (cache keys); a new one
        whenever rows are filed under another topic, as the row count then stays the same."""
        self.ids: list[str] = []
        self.topics: list[str] = []
        self.times: list[float | None] = []
        self.position: dict[str, int] = {}
        self.lexical = BM25()
        self.code_of: dict[str, int] = {}
        """A small integer per topic id, so a search groups by integers, not strings."""
        self.topic_names: list[str] = []
        self._vectors: Vectors = np.zeros((0, 0), dtype=np.float32)
        """Rows ``[:_filled]`` are the vectors; the rest is room to grow (doubling), so a
        split appends without copying the whole matrix. float16 when opened large."""
        self._filled = 0
        self._rows: list[Matrix] = []
        self._projection: Projection | None = None
        self._arrays: tuple[int, npt.NDArray[np.int64], npt.NDArray[np.float64]] | None = None
        self._lock = threading.RLock()
        self.widened = threading.Event()
        """Set once the vectors are float32 (at once unless opened large: see :meth:`widen`)."""
        self._widening = False
        self._stored_precision = False
        """Rows are held at float16 precision (an index opened large), in float16 until
        :meth:`widen` and in float32 after: a search finds the same either way."""
        self._lexical_files = LexicalFiles(root) if root is not None else None
        self._projection_files = ProjectionFiles(root) if root is not None else None
        self._entries_file = EntriesFile(root / ENTRIES_FILE) if root is not None else None
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)
            with ordinary_pages():
                self._load()
        if self._vectors.dtype == np.float32:
            self.widened.set()

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
            texts = [indexed_text(m) for m, _ in fresh]
            vectors = embed_matrix(self.embedder, [text or " " for text in texts])
            terms = [lexical_terms(text) for text in texts]
            if self.root is not None:
                self._write(fresh, vectors, terms)
            for (message, topic_id), vector, document in zip(fresh, vectors, terms, strict=True):
                self._remember(message["id"], topic_id, message_time(message), document, vector)

    def reassign(self, message_ids: Sequence[str], topic_id: str) -> int:
        """File indexed messages under another topic (a split's children) without embedding.

        Ids not indexed, or already under ``topic_id``, are skipped. One durable append.

        Returns:
            How many messages changed topic.
        """
        return self.level_with(dict.fromkeys(message_ids, topic_id))

    def level_with(self, located: Mapping[str, str]) -> int:
        """File every indexed message of ``located`` under the topic it names, in one append.

        ``store.message_ids()`` as ``located`` brings the index level with the store after a
        split (or a merge); nothing is embedded. Ids the index lacks are left to :meth:`add`.

        Returns:
            How many messages changed topic.
        """
        with self._lock:
            moves: dict[str, list[tuple[int, str]]] = {}
            for message_id, topic_id in located.items():
                row = self.position.get(message_id)
                if row is not None and self.topics[row] != topic_id:
                    moves.setdefault(topic_id, []).append((row, message_id))
            if not moves:
                return 0
            if self.root is not None:
                lines = "".join(
                    json.dumps(
                        {
                            "topic": topic_id,
                            "rows": [r for r, _ in rows],
                            "ids": [i for _, i in rows],
                        }
                    )
                    + "\n"
                    for topic_id, rows in moves.items()
                )
                append_durably(self.root / REKEYED_FILE, lines.encode("utf-8"))
            for topic_id, rows in moves.items():
                self._file_under(topic_id, [row for row, _ in rows])
            return sum(len(rows) for rows in moves.values())

    def _file_under(self, topic_id: str, rows: Sequence[int]) -> None:
        for row in rows:
            self.topics[row] = topic_id
        self._note_topic(topic_id, append=False)
        self._arrays = None
        self.token = next(_TOKENS)  # searches cached for the old topics must not be served

    def _remember(
        self,
        message_id: str,
        topic_id: str,
        time: float | None,
        terms: tuple[str, ...],
        vector: Matrix,
    ) -> None:
        self._supersede(message_id)
        self.position[message_id] = len(self.ids)
        self.ids.append(message_id)
        self._note_topic(topic_id)
        self.times.append(time)
        self.lexical.add(terms)
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

    def _write(
        self,
        fresh: Sequence[tuple[StoredMessage, str]],
        vectors: Matrix,
        terms: Sequence[tuple[str, ...]],
    ) -> None:
        assert self.root is not None and self._lexical_files is not None
        meta_path = self.root / META_FILE
        if not meta_path.exists():
            # A new index: files left by an interrupted reset would misalign its rows.
            self._lexical_files.reset()
            if self._projection_files is not None:
                self._projection_files.reset()
            remove_file(self.root / REKEYED_FILE)
            meta = {"dim": int(vectors.shape[1]), "embedder": embedder_name(self.embedder)}
            replace_durably(meta_path, json.dumps(meta).encode("utf-8"))
        append_durably(self.root / VECTORS_FILE, np.asarray(vectors, dtype=np.float16).tobytes())
        if self._projection is not None and self._projection_files is not None:
            shadows = self._projection.shadows_of(vectors)
            self._projection_files.append(shadows, self._projection.clusters_of(shadows))
        self._lexical_files.append(terms)
        assert self._entries_file is not None
        self._entries_file.append(
            [m["id"] for m, _ in fresh], [t for _, t in fresh], [message_time(m) for m, _ in fresh]
        )

    # ------------------------------------------------------------------------------ reading

    def vectors(self) -> Vectors:
        """All message vectors as one ``(n, d)`` matrix (built once per growth).

        float32 in memory although float16 on disk: numpy converts float16 at about 2 ns a
        value, which a search would pay on every row it scores; opening pays it once. An
        index opened with ``LARGE_INDEX`` rows or more is float16 (the same values) until
        :meth:`widen` has converted it: converting 100,000 rows was a third of opening one.
        """
        with self._lock:
            if self._rows:
                fresh = np.concatenate(self._rows).astype(np.float32)
                if self._stored_precision:
                    fresh = fresh.astype(np.float16)
                self._rows = []
                needed = self._filled + len(fresh)
                if len(self._vectors) < needed or self._vectors.shape[1] != fresh.shape[1]:
                    kind = self._vectors.dtype if self._filled else np.dtype(np.float32)
                    room = max(needed, self._filled + self._filled // GROWTH_DIVISOR)
                    # Its own mapping: the copy it replaces is unmapped, not left in the heap.
                    grown = mapped_empty((room, fresh.shape[1]), kind)
                    if self._filled:
                        grown[: self._filled] = self._vectors[: self._filled]
                    self._vectors = grown
                # Views handed out earlier end at their own length: writing past it is safe.
                self._vectors[self._filled : needed] = fresh
                self._filled = needed
            return self._vectors[: self._filled]

    def stored_vectors(self, message_ids: Iterable[str]) -> dict[str, Vector]:
        """The indexed vector (float32) of each of ``message_ids`` the index holds.

        Each is the embedding of the message's ``indexed_text``: a role about to embed that
        text again (the native responder, for the quotes of a window) takes it from here. Its
        own cache cannot hold a long thread's quotes: re-embedding them took 65 ms of a turn
        continuing a 5,800-turn ``bench soak`` thread against 23 ms at 1,000 (profiled).
        """
        with self._lock:
            rows = {i: self.position[i] for i in message_ids if i in self.position}
            if not rows:
                return {}
            matrix = self.vectors()
            return {i: np.asarray(matrix[row], dtype=np.float32) for i, row in rows.items()}

    def snapshot(self) -> Snapshot:
        """Everything a search reads, consistent with itself (later appends do not show)."""
        with self._lock:
            vectors = self.vectors()
            count = len(self.ids)
            if count >= LARGE_INDEX:
                with ordinary_pages():
                    if self._projection is None:
                        self._projection = Projection.fitted(vectors)
                        if self._projection_files is not None:
                            self._projection_files.save(self._projection)
                    else:
                        self._projection = self._projection.grown(vectors)
            if self._arrays is None or self._arrays[0] != count:
                # Only the rows appended since are converted (a split adds a few to 100,000);
                # filing rows under another topic drops the arrays, converted whole again.
                kept = self._arrays if self._arrays and self._arrays[0] < count else None
                known = 0 if kept is None else kept[0]
                codes = np.fromiter(
                    (self.code_of[t] for t in self.topics[known:count]), np.int64, count - known
                )
                times = np.fromiter(
                    (np.nan if t is None else t for t in self.times[known:count]),
                    np.float64,
                    count - known,
                )
                if kept is not None:
                    codes = np.concatenate([kept[1], codes])
                    times = np.concatenate([kept[2], times])
                self._arrays = (count, codes, times)
            return Snapshot(
                count=count,
                topic_names=list(self.topic_names),
                codes=self._arrays[1],
                times=self._arrays[2],
                vectors=vectors,
                lexical=self.lexical,
                projection=self._projection if count >= LARGE_INDEX else None,
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
            if dim <= 0:
                raise ValueError(f"dim {dim}")
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
        assert self._entries_file is not None
        entries = self._entries_file.read()
        vectors_path = self.root / VECTORS_FILE
        stored = _file_size(vectors_path)
        row_bytes = dim * _BYTES_PER_VALUE
        rows = min(len(entries), stored // row_bytes)
        if rows < len(entries) or rows * row_bytes < stored:
            log.warning("%s: cut to %d complete rows (crash during a write?)", self.root, rows)
            truncate_durably(vectors_path, rows * row_bytes)
            self._entries_file.rewrite(entries.cut(rows))
        matrix = _mapped_rows(vectors_path, rows, dim)
        # A small index is converted at once, as every search multiplies the query with all
        # its rows. A large one stays float16 until :meth:`widen` has converted it (a third
        # of the cold start at 100,000 rows if done here); meanwhile its searches convert the
        # few rows they score.
        widened = None if rows >= LARGE_INDEX else matrix.astype(np.float32)
        if widened is not None and not np.isfinite(widened).all():
            # Garbled bytes decode to a NaN or an infinity in nearly every row of hundreds of
            # float16 values; such a row would poison every search. Derived data: rebuilt.
            log.warning(
                "%s: damaged vectors (not finite); the index is rebuilt from the topic files",
                self.root,
            )
            self._reset_files()
            return
        self._vectors = matrix if widened is None else widened
        self._filled = rows
        self._stored_precision = rows >= LARGE_INDEX
        if rows >= LARGE_INDEX and self._projection_files is not None:
            self._projection = self._projection_files.load(matrix)
        assert self._lexical_files is not None
        columns = self._lexical_files.load(rows)
        # Documents the lexical files lack (an index from before them) are completed from
        # the topic store's text by ``attach_lexical``.
        self.lexical = BM25.from_columns(
            columns.term_id, columns.term_ids, columns.frequencies, columns.pair_counts
        )
        kept = entries.cut(rows)
        self.ids, self.topics, self.times = kept.ids, kept.topics, kept.times
        self.position = dict(zip(self.ids, range(rows), strict=True))
        if len(self.position) < rows:
            # An id indexed again under another topic: its earlier rows are superseded.
            for row, message_id in enumerate(self.ids):
                if self.position[message_id] != row:
                    self.topics[row] = SUPERSEDED_GROUP
        self._load_rekeyed(rows)
        for topic_id in dict.fromkeys(self.topics):
            self._note_topic(topic_id, append=False)

    def widen(self) -> None:
        """Start converting the float16 vectors of an index opened large to float32 (once).

        Until then each search converts the ~2,400 rows it scores (2–10 ms at 100,000
        messages, every query); converting all of them costs ~125 ms of CPU once, on a
        thread of its own: numpy's cast releases the GIL, so searches go on meanwhile. The
        evidence scorer starts it after its first search, not on open: the conversion
        (150–280 ms here) outlasts the open's remaining work and the first query (~60 ms),
        so they could not use it, and beside them on two busy cores it only competed with
        them (cold starts measured slower, within a wide noise).
        """
        with self._lock:
            if self._widening or self._vectors.dtype != np.float16 or not WIDEN_IN_BACKGROUND:
                return
            self._widening = True
            half = np.asarray(self._vectors[: self._filled], np.float16)
        threading.Thread(
            target=self._widen, args=(half,), name="message-index-widen", daemon=True
        ).start()

    def _widen(self, half: npt.NDArray[np.float16]) -> None:
        """Replace the float16 vectors with float32 ones converted here (see :meth:`widen`).

        Rows appended meanwhile are copied under the lock; the buffer has the room a
        doubling would give.
        """
        try:
            with ordinary_pages():
                full = np.empty((2 * len(half), half.shape[1]), np.float32)
            step = _WIDEN_ROWS
            for start in range(0, len(half), step):
                end = min(start + step, len(half))
                full[start:end] = half[start:end]
            with self._lock:
                current = self._vectors
                if (
                    current.dtype != np.float16
                    or current.shape[1] != half.shape[1]
                    or self._filled > len(full)
                ):
                    return  # rebuilt, or grown past the room meanwhile: keep float16
                full[len(half) : self._filled] = current[len(half) : self._filled]
                self._vectors = full
        except MemoryError:
            log.warning("%s: no memory to convert the vectors; searches convert rows", self.root)
        finally:
            self.widened.set()

    def _load_rekeyed(self, rows: int) -> None:
        """Apply ``rekeyed.jsonl`` to the rows read: a line counts for the rows it still names.

        A row counts while it holds the id the line names and is that id's current row (no
        later :meth:`add` superseded it). A torn last line is cut, so appends start afresh.
        """
        assert self.root is not None
        path = self.root / REKEYED_FILE
        raw = _read_bytes(path)
        complete = raw.rfind(b"\n") + 1
        if complete < len(raw):
            log.warning("%s: ignoring a torn last line (crash during a write?)", path)
            truncate_durably(path, complete)
        for number, record in decode_lines(raw[:complete].split(b"\n")[:-1]):
            topic, found, ids = (
                (record.get("topic"), record.get("rows"), record.get("ids"))
                if record is not None
                else (None, None, None)
            )
            if (
                not isinstance(topic, str)
                or not isinstance(found, list)
                or not isinstance(ids, list)
            ):
                log.warning("%s:%d: unreadable line skipped", path, number)
                continue
            for row, message_id in zip(found, ids, strict=False):
                if (
                    isinstance(row, int)
                    and 0 <= row < rows
                    and self.ids[row] == message_id
                    and self.position.get(message_id) == row
                ):
                    self.topics[row] = topic

    def attach_lexical(self, store: TopicStore) -> None:
        """Complete the lexical statistics of indexed messages the lexical files lack.

        Only after a crash between the two writes, or once for an index from before the
        lexical files: their terms are taken from the topic store's text (a regex pass, no
        model) and written, so no later opening reads that text again.
        """
        with self._lock:
            lacking = self.ids[self.lexical.count :]
            if not lacking:
                return
            log.info("%s: completing the lexical index of %d messages", self.root, len(lacking))
            found = store.get_messages(lacking)
            terms = [lexical_terms(indexed_text(found.get(i))) for i in lacking]
            if self._lexical_files is not None:
                self._lexical_files.append(terms)
            for document in terms:
                self.lexical.add(document)

    def _reset_files(self) -> None:
        assert self.root is not None
        for name in (META_FILE, VECTORS_FILE, ENTRIES_FILE, REKEYED_FILE):
            remove_file(self.root / name)
        if self._entries_file is not None:
            self._entries_file.forget()
        if self._lexical_files is not None:
            self._lexical_files.reset()
        if self._projection_files is not None:
            self._projection_files.reset()
        self._projection = None


def open_message_index(root: Path, embedder: Embedder, store: TopicStore) -> MessageIndex:
    """Open a thread's index and bring it level with its topic store.

    Messages the store holds but the index lacks (a crash between the two writes, or an index
    built by another embedder) are embedded now, in conversation order; nothing else is.
    Messages the index files under another topic than the store (a split, or a merge, a crash
    cut off before the index followed) are filed under the store's, without embedding.
    """
    index = MessageIndex(root, embedder)
    located = store.message_ids()
    current = list(map(located.get, index.ids))  # one pass in C, not a loop per message
    if (
        len(located) == len(index.position)
        and current == index.topics
        and index.lexical.count >= len(index.ids)
    ):
        return index  # every message indexed, each under the store's topic: the usual open
    stale = [i for i, topic in zip(index.ids, current, strict=True) if topic is None]
    if stale:
        log.warning("%s: %d indexed messages are in no topic; rebuilding", root, len(stale))
        index._reset_files()
        index = MessageIndex(root, embedder)
    index.attach_lexical(store)
    missing_ids = [i for i in located if i not in index.position]
    if missing_ids:
        log.info("%s: indexing %d messages not yet indexed", root, len(missing_ids))
        found = store.get_messages(missing_ids)
        # Conversation order (time, then storing order) without reading every topic file.
        order = {message_id: place for place, message_id in enumerate(missing_ids)}
        missing = sorted(
            found.values(),
            key=lambda m: (_sortable_time(message_time(m)), order[m["id"]]),
        )
        index.add(missing, [located[m["id"]] for m in missing])
    moved = index.level_with(located)
    if moved:
        log.info("%s: %d messages filed under the topics the store gives them", root, moved)
    return index


def _sortable_time(seconds: float | None) -> float:
    return float("inf") if seconds is None else seconds


class OverlayMessageIndex(MessageIndex):
    """A base index plus messages indexed in memory only (a dry run's split)."""

    def __init__(self, base: MessageIndex) -> None:
        super().__init__(None, base.embedder)
        self.base = base
        self.terms: list[tuple[str, ...]] = []
        """Lexical terms of this view's messages (scored on the base's statistics)."""

    def stored_vectors(self, message_ids: Iterable[str]) -> dict[str, Vector]:
        """The base's vectors, and this view's own for the messages it indexed."""
        wanted = list(message_ids)
        found = self.base.stored_vectors(wanted)
        found.update(super().stored_vectors(wanted))
        return found

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


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _mapped_rows(path: Path, rows: int, dim: int) -> npt.NDArray[np.float16]:
    """The first ``rows`` float16 rows of ``path``, mapped read-only rather than read.

    Reading 100,000 rows copied 100 MB into fresh memory: 0.05 s, or 0.3 s when the kernel
    had to find and clear the pages first, a third of a cold start's 1 s. A map shares the
    pages the file already has in the cache and touches only the rows a search reads (the
    background conversion to float32 reads the rest). The rows mapped are complete ones that
    the entries count; opening cuts only rows past those, so no other opening of the index
    shrinks what is mapped. Windows cannot remove a mapped file (an index built again removes
    its files), and some file systems cannot map one: there the rows are read.
    """
    if rows == 0:
        return np.zeros((0, dim), np.float16)
    stored: bytes | mmap.mmap | None = None
    if os.name != "nt":
        try:
            with path.open("rb") as file:
                length = rows * dim * _BYTES_PER_VALUE
                stored = mmap.mmap(file.fileno(), length, access=mmap.ACCESS_READ)
        except OSError as error:
            log.info("%s: not mapped (%s); its rows are read", path, error)
    if stored is None:
        stored = path.read_bytes()
    return np.frombuffer(stored, dtype=np.float16, count=rows * dim).reshape(rows, dim)
