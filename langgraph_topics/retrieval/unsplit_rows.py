"""The unsplit messages' part of the evidence arrays, carried from one turn to the next.

Every turn scores the working set's unsplit messages again (about 70 at 1,000 messages), and
most of what that takes does not depend on the question: each message's text, vector, terms
and time. Between two turns the list only gains the new exchange at its end, or loses its head
to a split; so the rows of the last few lists are kept, and a new list reuses the longest run
of a kept one that it starts with, computing only the messages after it. The arrays are
those the scorer built from scratch before, value for value (``tests/test_unsplit_rows.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from langgraph_topics.retrieval.bm25 import OutsideTerms
from langgraph_topics.retrieval.lexical import lexical_terms
from langgraph_topics.retrieval.message_index import message_time
from langgraph_topics.roles.native.text import indexed_text, message_text
from langgraph_topics.roles.native.vectors import Matrix, VectorCache
from langgraph_topics.state.records import StoredMessage

MessageKey = tuple[str, str, str | None, str | None, str | None]
KEPT_LISTS = 8
"""Lists kept: a few threads (or branches) in flight at once each keep theirs."""
VOCABULARY_LIMIT = 200_000
"""Terms the shared vocabulary may hold before it starts again (with the kept lists)."""


def message_key(message: StoredMessage) -> MessageKey:
    """Everything a message's row is computed from: id, content, speaker, time, tool calls.

    The fields :func:`indexed_text` and :func:`message_time` read, cheaper to gather than the
    text itself; the tool calls count by their text (rare, and they are lists).
    """
    return (
        message["id"],
        message["content"],
        message.get("name"),
        message.get("timestamp"),
        message_text(message) if message.get("tool_calls") else None,
    )


@dataclass(frozen=True)
class UnsplitRows:
    """The question-independent rows of a list of unsplit messages, in its order."""

    keys: tuple[MessageKey, ...]
    ids: list[str]
    vectors: Matrix
    """``(n, d)``, contiguous: one product with the query gives every cosine."""
    times: npt.NDArray[np.float64]
    """Each message's time in seconds (NaN when unknown)."""
    terms: list[tuple[str, ...]]
    """Each message's lexical terms."""
    counts: OutsideTerms
    """The same terms counted, for BM25."""

    def __len__(self) -> int:
        return len(self.keys)


class UnsplitRowsCache:
    """The rows of the last ``KEPT_LISTS`` unsplit lists; thread-safe.

    Args:
        vectors: Embeds (and caches) the messages not in a kept list.
    """

    def __init__(self, vectors: VectorCache) -> None:
        self._vectors = vectors
        self._lists: list[UnsplitRows] = []
        """Least recently used first."""
        self._vocabulary: dict[str, int] = {}
        self._lock = threading.Lock()

    def rows(self, messages: Sequence[StoredMessage]) -> UnsplitRows:
        """The rows of ``messages`` (computed only for those after the longest reusable run)."""
        keys = tuple(message_key(m) for m in messages)
        with self._lock:
            for place, kept in enumerate(self._lists):
                # Lengths first: tuples compare item by item even when their lengths differ.
                if len(kept.keys) == len(keys) and kept.keys == keys:
                    self._lists.append(self._lists.pop(place))
                    return kept
            if len(self._vocabulary) > VOCABULARY_LIMIT:
                # Ids never change for the lists holding them: start a new vocabulary instead.
                self._vocabulary = {}
                self._lists.clear()
            vocabulary = self._vocabulary
            start, reused = _longest_head(self._lists, keys)
        known = 0 if reused is None else len(reused) - start
        fresh = self._computed(messages[known:], vocabulary)
        rows = fresh if reused is None else _joined(reused, start, fresh)
        rows = UnsplitRows(keys, rows.ids, rows.vectors, rows.times, rows.terms, rows.counts)
        with self._lock:
            self._lists.append(rows)
            while len(self._lists) > KEPT_LISTS:
                self._lists.pop(0)
        return rows

    def _computed(
        self, messages: Sequence[StoredMessage], vocabulary: dict[str, int]
    ) -> UnsplitRows:
        texts = [indexed_text(m) or " " for m in messages]
        keyed = [((m["id"], hash(t)), t) for m, t in zip(messages, texts, strict=True)]
        terms = [lexical_terms(t) for t in texts]
        with self._lock:  # the vocabulary grows only under the lock
            counts = OutsideTerms.of(terms, vocabulary)
        return UnsplitRows(
            keys=(),
            ids=[m["id"] for m in messages],
            vectors=self._vectors.embed(keyed) if messages else np.zeros((0, 0), np.float32),
            times=np.asarray(
                [np.nan if t is None else t for t in map(message_time, messages)],
                dtype=np.float64,
            ),
            terms=terms,
            counts=counts,
        )


def _longest_head(
    kept: Sequence[UnsplitRows], keys: tuple[MessageKey, ...]
) -> tuple[int, UnsplitRows | None]:
    """The kept list whose tail from some ``start`` on is the longest head of ``keys``.

    Candidates are compared longest first and the first match wins: comparing keys costs
    more than finding where ``keys[0]`` sits in each list.
    """
    if not keys:
        return 0, None
    candidates: list[tuple[int, int, UnsplitRows]] = []
    for place, rows in enumerate(kept):
        try:
            start = rows.keys.index(keys[0])
        except ValueError:
            continue
        length = len(rows.keys) - start
        if length <= len(keys):
            candidates.append((length, place, rows))
    for length, _, rows in sorted(candidates, key=lambda c: (-c[0], -c[1])):
        start = len(rows.keys) - length
        if keys[:length] == rows.keys[start:]:
            return start, rows
    return 0, None


def _joined(kept: UnsplitRows, start: int, fresh: UnsplitRows) -> UnsplitRows:
    """``kept``'s rows from ``start`` on, then ``fresh``'s."""
    if not len(fresh.ids):
        vectors = kept.vectors[start:]
    else:
        vectors = np.concatenate([kept.vectors[start:], fresh.vectors])
    return UnsplitRows(
        keys=(),
        ids=kept.ids[start:] + fresh.ids,
        vectors=np.ascontiguousarray(vectors),
        times=np.concatenate([kept.times[start:], fresh.times]),
        terms=kept.terms[start:] + fresh.terms,
        counts=kept.counts.after(start, fresh.counts),
    )
