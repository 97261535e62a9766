"""Okapi BM25 (k1 = 1.5, b = 0.75, Lucene's non-negative idf), growing one document at a time.

Shared by the per-thread retrieval index and the benchmark baselines. Documents are appended
(a split adds messages to the index), so document frequencies and postings are kept up to date
incrementally and idf is computed at query time: adding a document never rebuilds the index.
"""

from __future__ import annotations

import math
import re
import threading
from array import array
from bisect import bisect_left
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

WEIGHT_CACHE_VALUES = 2_000_000
"""Per-term weights kept between queries, in values (16 MB), least recently used dropped."""

SPREAD_VALUES = 2_000_000
"""Per-term weights of every document kept between queries, in values (16 MB), least
recently used dropped (``BM25._spread``). At 64 MB the cache was 31 MB of a 20,000-message
thread's resident memory a hundred turns after its index turned large (``bench soak``'s thread
continued), for little: spreading a term again takes ~35 µs at 20,000 messages (2 cores)."""
TOP_CACHE_TERMS = 4096
"""Terms whose best documents are kept between queries."""

_WORD = re.compile(r"[^\W_]+")
_CJK_CHAR = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def tokenize(text: str) -> list[str]:
    """Lower-cased letter/digit runs, Chinese characters one by one (no stemming, no stop list).

    The plain tokenizer of the retrieval baselines: Latin text as the reference figures count
    it, and Chinese, which has no spaces, one character a token instead of a whole clause.
    """
    spaced = _CJK_CHAR.sub(lambda match: f" {match.group(0)} ", text.lower())
    return _WORD.findall(spaced)


@dataclass(frozen=True)
class _Loaded:
    """Postings of documents loaded in bulk: sorted by term, each term's run by its id."""

    term_id: Mapping[str, int]
    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    documents: npt.NDArray[np.int32]
    frequencies: npt.NDArray[np.int32]
    """As stored (4 bytes a value, not 8): a weight converts them, to the same float64 values."""

    @classmethod
    def empty(cls) -> _Loaded:
        none = np.zeros(0, dtype=np.int64)
        return cls({}, none, none, np.zeros(0, np.int32), np.zeros(0, np.int32))

    def _run(self, term: str) -> tuple[int, int] | None:
        place = self.term_id.get(term)
        if place is None or place >= len(self.starts):
            return None
        start, end = int(self.starts[place]), int(self.ends[place])
        return (start, end) if end > start else None

    def frequency(self, term: str) -> int:
        """How many loaded documents hold ``term``."""
        run = self._run(term)
        return 0 if run is None else run[1] - run[0]

    def postings(self, term: str) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]] | None:
        """The loaded documents holding ``term`` and its frequency in each."""
        run = self._run(term)
        if run is None:
            return None
        return self.documents[run[0] : run[1]], self.frequencies[run[0] : run[1]]


class BM25:
    """A BM25 index over tokenised documents that new documents can join.

    Args:
        documents: One token list per document (more can be added with :meth:`add`).
        k1: Term-frequency saturation.
        b: Length normalisation.
    """

    def __init__(
        self, documents: Iterable[Sequence[str]] = (), *, k1: float = 1.5, b: float = 0.75
    ) -> None:
        self.k1 = k1
        self.b = b
        self.count = 0
        self._lengths: list[int] = []
        self._total_length = 0
        self._frequency: Counter[str] = Counter()
        self._postings: dict[str, tuple[array[int], array[int]]] = {}
        """Per term: the documents holding it and its frequency in each (since the bulk load),
        as 4-byte machine integers: a list of Python ints and a numpy copy of it for searches
        took 3–4 times the room (``bench soak``: ~20 MB at 20,000 messages); the weights of a
        term are computed from a copy made when needed (:meth:`_weighted` keeps them)."""
        self._loaded = _Loaded.empty()
        """The documents loaded in bulk (:meth:`from_columns`), as sorted postings."""
        self._norm_cache: npt.NDArray[np.float64] | None = None
        self._weights: OrderedDict[
            str, tuple[int, npt.NDArray[np.int32], npt.NDArray[np.float64]]
        ] = OrderedDict()
        """Per term: the document count they were computed at, its documents, its weights."""
        self._weighted_values = 0
        self._weights_lock = threading.Lock()
        self._tops: dict[str, tuple[int, int, npt.NDArray[np.int32]]] = {}
        """Per term: the document count and how many were asked, and its best documents."""
        self._spreads: OrderedDict[str, tuple[int, npt.NDArray[np.float64]]] = OrderedDict()
        """Per term: the document count, and its weight in every document (``_spread``)."""
        for document in documents:
            self.add(document)

    @classmethod
    def from_columns(
        cls,
        term_id: Mapping[str, int],
        term_ids: npt.NDArray[np.int32],
        frequencies: npt.NDArray[np.int32],
        pair_counts: npt.NDArray[np.int32],
        *,
        k1: float = 1.5,
        b: float = 0.75,
    ) -> BM25:
        """The index of documents given as columns (see ``lexical_files``), built vectorised.

        Scores as if the documents were added one by one; no loop over documents or terms,
        which is what opening a thread's index costs instead of re-reading its text.

        Args:
            term_id: Each term's id (its place in the lexicon); kept, not copied.
            term_ids: Every (document, term) pair's term id, documents in order.
            frequencies: Each pair's term frequency.
            pair_counts: How many pairs each document has.
            k1: Term-frequency saturation.
            b: Length normalisation.
        """
        index = cls(k1=k1, b=b)
        documents = len(pair_counts)
        owner = np.repeat(np.arange(documents, dtype=np.int64), pair_counts)
        lengths = np.bincount(owner, weights=frequencies, minlength=documents).astype(np.int64)
        index.count = documents
        index._lengths = lengths.tolist()
        index._total_length = int(lengths.sum())
        order = np.argsort(term_ids, kind="stable")  # documents stay in order within a term
        vocabulary = len(term_id)
        counts = np.bincount(term_ids, minlength=vocabulary).astype(np.int64)
        ends = np.cumsum(counts)
        index._loaded = _Loaded(
            term_id=term_id,
            starts=ends - counts,
            ends=ends,
            documents=owner[order].astype(np.int32),
            frequencies=np.asarray(frequencies[order], np.int32),
        )
        return index

    def add(self, document: Sequence[str]) -> int:
        """Append one document; returns its index."""
        index = self.count
        self.count += 1
        self._lengths.append(len(document))
        self._total_length += len(document)
        for term, tf in Counter(document).items():
            self._frequency[term] += 1
            postings = self._postings.get(term)
            if postings is None:
                postings = self._postings[term] = (array("i"), array("i"))
            documents, frequencies = postings
            documents.append(index)
            frequencies.append(tf)
        self._norm_cache = None
        return index

    def idf(self, term: str) -> float:
        """``log(1 + (N − n + 0.5) / (n + 0.5))``: positive even for a term in most documents."""
        n = self._frequency.get(term, 0) + self._loaded.frequency(term)
        return math.log(1 + (self.count - n + 0.5) / (n + 0.5)) if n else 0.0

    def _norm(self) -> npt.NDArray[np.float64]:
        if self._norm_cache is None or len(self._norm_cache) != self.count:
            lengths = np.asarray(self._lengths, dtype=np.float64)
            average = self._total_length / self.count if self.count and self._total_length else 1.0
            self._norm_cache = self.k1 * (1 - self.b + self.b * lengths / average)
        return self._norm_cache

    def scores(self, query: Sequence[str]) -> npt.NDArray[np.float64]:
        """The BM25 score of every document for the query tokens (repeats count again)."""
        out = np.zeros(self.count, dtype=np.float64)
        for term in query:
            weighted = self._weighted(term)
            if weighted is not None:
                out[weighted[0]] += weighted[1]
        return out

    def scores_at(
        self, query: Sequence[str], rows: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float64]:
        """``scores(query)[rows]`` for ascending ``rows``, computed for those rows only.

        Bit for bit the same values: each row adds the same weights in the same order.
        Rows past the index score 0. Each term's weights are spread over every document once
        per state of the index (``_spread``), so a query costs a lookup per row and term.
        """
        out = np.zeros(len(rows), dtype=np.float64)
        if not len(rows):
            return out
        inside = rows[rows < self.count] if len(rows) and rows[-1] >= self.count else rows
        for term in query:
            spread = self._spread(term)
            if spread is not None:
                out[: len(inside)] += spread[inside]
        return out

    def _spread(self, term: str) -> npt.NDArray[np.float64] | None:
        """A term's weight in every document (0 where absent), kept until a document joins.

        A lookup per row instead of a search of the postings per row: the candidates of a
        large index are scored with it.
        """
        with self._weights_lock:
            known = self._spreads.get(term)
            if known is not None and known[0] == self.count:
                self._spreads.move_to_end(term)
                return known[1]
        count = self.count
        weighted = self._weighted(term)
        if weighted is None:
            return None
        spread = np.zeros(count, dtype=np.float64)
        documents, weights = weighted
        inside = documents < count
        spread[documents[inside]] = weights[inside]
        with self._weights_lock:
            if self.count == count:
                self._spreads[term] = (count, spread)
                while len(self._spreads) > 1 and len(self._spreads) * count > SPREAD_VALUES:
                    self._spreads.popitem(last=False)
        return spread

    def top_documents(self, query: Sequence[str], count: int) -> npt.NDArray[np.int64]:
        """Candidates for the best ``count`` documents: each query term's ``count`` best.

        The documents where one term weighs most (kept per term until a document joins), in
        ascending order: a document that ranks high only on several terms together, none of
        them among its best, is missed; :meth:`scores_at` then scores the candidates exactly.
        """
        parts: list[npt.NDArray[np.int32]] = []
        for term in dict.fromkeys(query):
            with self._weights_lock:
                known = self._tops.get(term)
            if known is not None and known[0] == self.count and known[1] >= count:
                parts.append(known[2])
                continue
            weighted = self._weighted(term)
            if weighted is None:
                continue
            documents, weights = weighted
            best = (
                documents
                if len(weights) <= count
                else documents[np.argpartition(-weights, count - 1)[:count]]
            )
            with self._weights_lock:
                self._tops[term] = (self.count, count, best)
                while len(self._tops) > TOP_CACHE_TERMS:
                    self._tops.pop(next(iter(self._tops)))
            parts.append(best)
        if not parts:
            return np.zeros(0, dtype=np.int64)
        ordered = np.sort(np.concatenate(parts).astype(np.int64))
        return ordered[np.r_[True, ordered[1:] != ordered[:-1]]]

    def _weighted(self, term: str) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]] | None:
        """The documents holding ``term`` and its score in each, kept until a document joins.

        A thread's questions share most of their words, and between two splits the index
        does not change: each turn would compute the same weights again.
        """
        with self._weights_lock:
            known = self._weights.get(term)
            if known is not None and known[0] == self.count:
                self._weights.move_to_end(term)
                return known[1], known[2]
        arrays = self._term_arrays(term)
        if arrays is None:
            return None
        indices, tf = arrays
        count, norm = self.count, self._norm()
        weights = self.idf(term) * tf * (self.k1 + 1) / (tf + norm[indices])
        with self._weights_lock:
            if self.count != count:  # a document joined meanwhile: these may be stale
                return indices, weights
            previous = self._weights.pop(term, None)
            if previous is not None:
                self._weighted_values -= len(previous[2])
            self._weights[term] = (count, indices, weights)
            self._weighted_values += len(weights)
            while self._weighted_values > WEIGHT_CACHE_VALUES and len(self._weights) > 1:
                _, (_, _, dropped) = self._weights.popitem(last=False)
                self._weighted_values -= len(dropped)
        return indices, weights

    def _term_arrays(self, term: str) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]] | None:
        """The documents holding ``term`` and its frequency in each (fresh arrays or views).

        Frequencies stay integers: ``idf * tf`` converts them to the float64 values a float64
        copy would hold, so the weights are the same bit for bit.
        """
        loaded = self._loaded.postings(term)
        postings = self._postings.get(term)
        if postings is None:
            return loaded
        documents = np.array(postings[0], dtype=np.int32)
        frequencies = np.array(postings[1], dtype=np.int32)
        if loaded is not None:
            return np.concatenate([loaded[0], documents]), np.concatenate([loaded[1], frequencies])
        return documents, frequencies

    def pairs_between(
        self, first: int, end: int
    ) -> tuple[list[str], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Every (term, document) pair of the documents ``first`` to ``end`` (excluded).

        What a model of the thread's vocabulary reads (``retrieval/related_terms.py``): the
        postings as they are held, nothing re-tokenised.

        Returns:
            The terms, each pair's term (an index into them) and each pair's document.
        """
        loaded = self._loaded
        names = list(loaded.term_id)
        counts = (loaded.ends - loaded.starts)[: len(names)]
        codes = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
        documents = loaded.documents[: len(codes)]
        inside = (documents >= first) & (documents < end)
        code_parts = [codes[inside]]
        document_parts = [documents[inside]]
        known = dict(loaded.term_id)
        more_codes: list[int] = []
        more_documents: list[int] = []
        # A copy of the items: documents may join meanwhile (their ids are past ``end``).
        for term, (held, _) in list(self._postings.items()):
            start = bisect_left(held, first)
            stop = bisect_left(held, end, start)
            if stop > start:
                code = known.setdefault(term, len(names))
                if code == len(names):
                    names.append(term)
                more_codes.extend([code] * (stop - start))
                more_documents.extend(held[start:stop])
        code_parts.append(np.asarray(more_codes, dtype=np.int64))
        document_parts.append(np.asarray(more_documents, dtype=np.int64))
        return names, np.concatenate(code_parts), np.concatenate(document_parts)

    def order(self, query: Sequence[str]) -> list[int]:
        """Document indices by score, best first; ties (and zero scores) in document order."""
        return [int(i) for i in np.argsort(-self.scores(query), kind="stable")]


def score_documents(
    index: BM25, query: Sequence[str], documents: Sequence[Sequence[str]]
) -> npt.NDArray[np.float64]:
    """BM25 scores of documents outside the index, with the index's idf and average length.

    For messages not indexed yet (the unsplit ones): they are scored on the thread's statistics
    so that their scores compare with the indexed messages' scores.
    """
    out = np.zeros(len(documents), dtype=np.float64)
    if not documents:
        return out
    average = index._total_length / index.count if index.count and index._total_length else 0.0
    if not average:
        average = float(np.mean([len(d) for d in documents])) or 1.0
    idf = {term: index.idf(term) or math.log(1 + (index.count + 0.5) / 0.5) for term in query}
    for position, document in enumerate(documents):
        counts = _term_counts(tuple(document))
        norm = index.k1 * (1 - index.b + index.b * len(document) / average)
        for term in query:
            tf = counts.get(term, 0)
            if tf:
                out[position] += idf[term] * tf * (index.k1 + 1) / (tf + norm)
    return out


@lru_cache(maxsize=4096)
def _term_counts(document: tuple[str, ...]) -> Counter[str]:
    """A document's term counts (shared, read-only): the unsplit messages are scored every turn."""
    return Counter(document)


@dataclass(frozen=True)
class OutsideTerms:
    """Term counts of documents outside an index, as flat (document, term, count) pairs.

    The unsplit messages are scored again every turn: their counts are kept (``retrieval/
    unsplit_rows.py``) and a query then costs a few array operations per query term
    (:meth:`scores`) instead of a dictionary lookup per document and term.
    """

    vocabulary: Mapping[str, int]
    """Each term's id; shared by related instances, ids never change (only new ones join)."""
    lengths: npt.NDArray[np.int64]
    """Each document's length in terms."""
    starts: npt.NDArray[np.int64]
    """Where each document's pairs start (one more entry: the end of the last)."""
    owners: npt.NDArray[np.int64]
    """Each pair's document."""
    term_ids: npt.NDArray[np.int64]
    """Each pair's term id."""
    counts: npt.NDArray[np.float64]
    """Each pair's term frequency."""

    @classmethod
    def of(cls, documents: Sequence[Sequence[str]], vocabulary: dict[str, int]) -> OutsideTerms:
        """The pairs of ``documents``; terms not in ``vocabulary`` are added to it."""
        owners: list[int] = []
        term_ids: list[int] = []
        counts: list[int] = []
        starts = [0]
        for position, document in enumerate(documents):
            for term, tf in _term_counts(tuple(document)).items():
                owners.append(position)
                term_ids.append(vocabulary.setdefault(term, len(vocabulary)))
                counts.append(tf)
            starts.append(len(owners))
        return cls(
            vocabulary=vocabulary,
            lengths=np.array([len(d) for d in documents], dtype=np.int64),
            starts=np.array(starts, dtype=np.int64),
            owners=np.array(owners, dtype=np.int64),
            term_ids=np.array(term_ids, dtype=np.int64),
            counts=np.array(counts, dtype=np.float64),
        )

    def __len__(self) -> int:
        return len(self.lengths)

    def after(self, first: int, more: OutsideTerms) -> OutsideTerms:
        """The documents from ``first`` on, then those of ``more`` (same vocabulary)."""
        assert more.vocabulary is self.vocabulary
        cut = int(self.starts[first])
        return OutsideTerms(
            vocabulary=self.vocabulary,
            lengths=np.concatenate([self.lengths[first:], more.lengths]),
            starts=np.concatenate(
                [self.starts[first:-1] - cut, more.starts + (int(self.starts[-1]) - cut)]
            ),
            owners=np.concatenate([self.owners[cut:] - first, more.owners + (len(self) - first)]),
            term_ids=np.concatenate([self.term_ids[cut:], more.term_ids]),
            counts=np.concatenate([self.counts[cut:], more.counts]),
        )

    def scores(self, index: BM25, query: Sequence[str]) -> npt.NDArray[np.float64]:
        """:func:`score_documents` of these documents, bit for bit.

        Each document adds the same terms' weights in the same order (the query's), each
        weight computed with the same operations in the same order, so only the loops differ.
        """
        out = np.zeros(len(self), dtype=np.float64)
        if not len(self):
            return out
        average = index._total_length / index.count if index.count and index._total_length else 0.0
        if not average:
            average = float(np.mean(self.lengths)) or 1.0
        idf = {term: index.idf(term) or math.log(1 + (index.count + 0.5) / 0.5) for term in query}
        norm = index.k1 * (1 - index.b + index.b * self.lengths / average)
        # Each query term's pairs, in query order (a repeated term again): ``np.add.at`` adds
        # them in that order, so each document sums its weights in the query's order.
        found: dict[str, npt.NDArray[np.int64]] = {}
        parts: list[npt.NDArray[np.int64]] = []
        weights: list[float] = []
        sizes: list[int] = []
        for term in query:
            hits = found.get(term)
            if hits is None:
                term_id = self.vocabulary.get(term)
                hits = _NO_PAIRS if term_id is None else np.flatnonzero(self.term_ids == term_id)
                found[term] = hits
            if len(hits):
                parts.append(hits)
                weights.append(idf[term])
                sizes.append(len(hits))
        if not parts:
            return out
        pairs = np.concatenate(parts)
        owners, tf = self.owners[pairs], self.counts[pairs]
        term_idf = np.repeat(np.asarray(weights, dtype=np.float64), sizes)
        np.add.at(out, owners, term_idf * tf * (index.k1 + 1) / (tf + norm[owners]))
        return out


_NO_PAIRS = np.zeros(0, dtype=np.int64)
