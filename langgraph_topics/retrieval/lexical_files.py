"""The lexical half of a thread's retrieval index on disk, so opening never re-reads the text.

Three append-only files beside the vectors, one document per indexed message, in index order::

    retrieval/lexicon.txt     # one term per line; a term's id is its line number (from 0)
    retrieval/postings.i32    # per document, its (term id, frequency) pairs as int32
    retrieval/documents.i32   # per document, how many pairs it has, as int32

They are written before the entries file (the index's commit point) and cut back on open to the
documents the entries hold, like the vectors. Terms contain no whitespace (``lexical_terms``), so
a line is a term.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from langgraph_topics.stores.durable import append_durably, remove_file, truncate_durably

log = logging.getLogger(__name__)

LEXICON_FILE = "lexicon.txt"
POSTINGS_FILE = "postings.i32"
DOCUMENTS_FILE = "documents.i32"
FILES = (LEXICON_FILE, POSTINGS_FILE, DOCUMENTS_FILE)
_INT = np.dtype("<i4")


@dataclass(frozen=True)
class LexicalColumns:
    """Documents as columns: every pair's term id and frequency, and each document's pair count."""

    term_id: dict[str, int]
    """Each term's id (its line in the lexicon)."""
    term_ids: npt.NDArray[np.int32]
    frequencies: npt.NDArray[np.int32]
    pair_counts: npt.NDArray[np.int32]

    @property
    def documents(self) -> int:
        """How many documents the columns hold."""
        return len(self.pair_counts)


class LexicalFiles:
    """Reads and appends a retrieval index's lexical files.

    Args:
        root: The index directory.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.term_id: dict[str, int] = {}
        self._lexicon_read = False

    def load(self, rows: int) -> LexicalColumns:
        """The first ``rows`` documents on disk (fewer when the files hold fewer).

        Files holding more documents than ``rows`` (a crash before the entries were written)
        are cut back to ``rows``; unreadable ones are emptied, to be rebuilt by the caller.
        """
        vocabulary = self._read_lexicon()
        counts = _ints(self.root / DOCUMENTS_FILE)
        pairs = _ints(self.root / POSTINGS_FILE)
        ends = np.cumsum(counts, dtype=np.int64)
        # Documents whose pairs are all on disk, and no more than the index holds.
        documents = min(rows, int(np.searchsorted(ends, len(pairs) // 2, side="right")))
        used = int(ends[documents - 1]) if documents else 0
        columns = pairs[: 2 * used].reshape(-1, 2)
        term_ids = np.ascontiguousarray(columns[:, 0])
        if used and (int(term_ids.min()) < 0 or int(term_ids.max()) >= len(vocabulary)):
            log.warning("%s: lexical files disagree; they will be rebuilt", self.root)
            self.reset()
            return self._columns(0)
        if documents < len(counts) or 2 * used < len(pairs):
            _cut(self.root / DOCUMENTS_FILE, documents * _INT.itemsize)
            _cut(self.root / POSTINGS_FILE, 2 * used * _INT.itemsize)
        return LexicalColumns(
            term_id=dict(self.term_id),
            term_ids=term_ids,
            frequencies=np.ascontiguousarray(columns[:, 1]),
            pair_counts=counts[:documents],
        )

    def _read_lexicon(self) -> list[str]:
        raw = _read(self.root / LEXICON_FILE)
        complete = raw.rfind(b"\n") + 1
        if complete < len(raw):
            # A torn last term: the next term appended must start on a line of its own.
            truncate_durably(self.root / LEXICON_FILE, complete)
        vocabulary = raw[:complete].decode("utf-8", errors="replace").split("\n")[:-1]
        self.term_id = {term: place for place, term in enumerate(vocabulary)}
        self._lexicon_read = True
        return vocabulary

    def _columns(self, documents: int) -> LexicalColumns:
        empty = np.zeros(0, dtype=np.int32)
        return LexicalColumns({}, empty, empty, np.zeros(documents, dtype=np.int32))

    def append(self, documents: Sequence[Sequence[str]]) -> None:
        """Write documents' terms after the ones on disk (new terms join the lexicon first)."""
        if not self._lexicon_read:
            self._read_lexicon()  # ids continue the lexicon on disk
        new_terms: list[str] = []
        pairs: list[int] = []
        counts: list[int] = []
        for document in documents:
            frequencies = Counter(document)
            for term, frequency in frequencies.items():
                if term not in self.term_id:
                    self.term_id[term] = len(self.term_id)
                    new_terms.append(term)
                pairs.extend((self.term_id[term], frequency))
            counts.append(len(frequencies))
        if new_terms:
            append_durably(self.root / LEXICON_FILE, "".join(f"{t}\n" for t in new_terms).encode())
        append_durably(self.root / POSTINGS_FILE, np.asarray(pairs, dtype=_INT).tobytes())
        append_durably(self.root / DOCUMENTS_FILE, np.asarray(counts, dtype=_INT).tobytes())

    def reset(self) -> None:
        """Delete the files (the index is rebuilt)."""
        self.term_id = {}
        self._lexicon_read = True
        for name in FILES:
            remove_file(self.root / name)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def _ints(path: Path) -> npt.NDArray[np.int32]:
    raw = _read(path)
    whole = len(raw) - len(raw) % _INT.itemsize
    return np.frombuffer(raw[:whole], dtype=_INT).astype(np.int32)


def _cut(path: Path, size: int) -> None:
    if path.exists() and path.stat().st_size > size:
        truncate_durably(path, size)
