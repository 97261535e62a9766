"""Keyword navigation: related terms learned from the thread itself (seed 004 §3.9, issue 38).

"auth" should also find the messages that say "login", "jwt" or "token" when this thread uses
them together. No thesaurus is shipped and no model is asked: the relations are read from what
the thread's retrieval index already holds (``retrieval/message_index.py``), its BM25 postings
(which messages hold which terms) and its message vectors.

For a query term ``t`` held by the messages ``D(t)``:

1. **Co-occurrence.** Its context is ``D(t)`` and their neighbours of the same sitting (a
   question and its answer are two messages). A candidate ``r`` is a term held by at least
   ``MIN_SUPPORT`` context messages and by at least one message outside ``D(t)`` (a term found
   only beside ``t`` finds nothing ``t`` does not). Association: ``c / √(|context| · df(r))``
   (Ochiai), ``c`` the context messages holding ``r``.
2. **Embeddings.** The centroid of each term's messages (their stored vectors, the thread's
   mean taken out): a candidate used in messages about the same things as ``t`` agrees with it;
   one that met ``t`` by chance does not. Agreement: the cosine of the two centroids.
3. ``relatedness = √(association · max(agreement, 0))`` in [0, 1]; the ``PER_TERM`` best
   above ``MIN_RELATED`` are kept.

Terms are the index's own (``retrieval/lexical.py``): English stems and Chinese character pairs,
so both languages work alike; a Chinese pair sharing a character with ``t`` is a piece of the
same word, not a relation, and is skipped, as is a pair holding a particle (the seam between
two words: "的训" of 的训练). Terms too rare (one message) or too common (over ``MAX_SHARE`` of
the messages) neither expand nor are added, nor are numbers.

The model of a thread (:class:`RelatedTerms`) is built once from the index and kept with it; it
is built again only when the thread has grown by ``REBUILD_SHARE`` since (term relations move
slowly; a few new messages do not change them), so no query pays for it but the first after
that growth. Its memory is bounded: the newest ``MAX_DOCUMENTS`` messages are modelled (two
int32 arrays of their term pairs), and at most ``CACHED_TERMS`` terms' relations are kept.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections import Counter, OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from langgraph_topics.keywords.extraction import _CHINESE_PARTICLES, CHINESE_STOP_WORDS
from langgraph_topics.retrieval.lexical import lexical_terms, stem
from langgraph_topics.retrieval.message_index import MessageIndex, OverlayMessageIndex
from langgraph_topics.stores.protocols import TopicStore

MIN_SUPPORT = 2
"""Context messages a candidate must share with the term (one meeting is chance)."""
MAX_SHARE = 0.2
"""Terms held by more than this share of the messages are too common to navigate by."""
MIN_RELATED = 0.2
"""The lowest relatedness kept."""
PER_TERM = 3
"""Related terms kept per query term."""
MAX_EXPANSION = 8
"""Related terms added to one query at most."""
EXPANSION_WEIGHT = 0.5
"""A related term's weight in the query is this times its relatedness: always under the
weight of the query's own terms (1), usually a fifth of it."""
SITTING_GAP_SECONDS = 1800.0
"""Neighbours further apart than this are not of the same sitting (as in the evidence)."""
CANDIDATES = 16
"""Candidates (the best by co-occurrence) whose centroids are compared."""
CENTROID_ROWS = 32
"""A term's centroid is the mean of at most this many of its messages' vectors, evenly taken."""
MEAN_ROWS = 2048
"""The thread's mean vector is taken over at most this many messages, evenly taken."""
MAX_DOCUMENTS = 20_000
"""The newest messages modelled: a thread's vocabulary as it speaks now, in bounded memory."""
REBUILD_SHARE = 0.05
"""A model is rebuilt once the thread has grown by this share of the messages it modelled."""
CACHED_TERMS = 2048
"""Terms whose relations a model keeps (least recently asked dropped)."""

SURFACE_MESSAGES = 3
"""Messages read to show a related term as the word the thread writes for it."""

_CJK_CHARACTERS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK = re.compile(f"[{_CJK_CHARACTERS}]")
_WORD = re.compile(rf"[^\W\d_{_CJK_CHARACTERS}]+")
"""A Latin word as ``retrieval/lexical.py`` reads it (Chinese characters end it)."""

_PARTICLES = frozenset(_CHINESE_PARTICLES)
"""The keyword extractor's cut characters (its private set, read here rather than copied)."""

Ints = npt.NDArray[np.int32]
Related = tuple[tuple[str, float], ...]


@dataclass
class RelatedTerms:
    """The term relations of one thread's index, as of ``documents`` messages.

    Built by :meth:`of`; read by :meth:`related` and :meth:`expansion` (thread-safe).
    """

    first: int
    """The first message modelled (the index's row)."""
    documents: int
    """The index's message count when the model was built (rows ``first`` to it modelled)."""
    code_of: dict[str, int]
    """Each navigable term's code."""
    names: list[str]
    """The navigable terms by code."""
    frequency: Ints
    """Each term's message count (within the modelled messages)."""
    term_starts: Ints
    """Where each term's messages start in ``term_rows`` (one more entry: the end)."""
    term_rows: Ints
    """Each term's messages (rows from ``first``), ascending."""
    row_starts: Ints
    """Where each message's terms start in ``row_terms`` (one more entry: the end)."""
    row_terms: Ints
    """Each message's navigable terms, as codes."""
    together: npt.NDArray[np.bool_]
    """Whether modelled rows i and i + 1 are of the same sitting."""
    mean: npt.NDArray[np.float32]
    """The thread's mean message vector (taken out of the centroids)."""
    _cache: OrderedDict[str, Related] = field(default_factory=OrderedDict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def of(cls, index: MessageIndex) -> RelatedTerms:
        """The model of ``index``'s newest ``MAX_DOCUMENTS`` messages (postings and vectors)."""
        snap = index.snapshot()
        end = min(snap.count, snap.lexical.count)
        first = max(0, end - MAX_DOCUMENTS)
        names, codes, rows = snap.lexical.pairs_between(first, end)
        rows = rows - first
        modelled = end - first
        frequency = np.bincount(codes, minlength=len(names))
        common = max(MIN_SUPPORT, int(MAX_SHARE * modelled))
        supported = np.flatnonzero((frequency >= MIN_SUPPORT) & (frequency <= common))
        kept = np.asarray([k for k in supported.tolist() if _navigable(names[k])], np.int64)
        recode = np.full(len(names), -1, dtype=np.int64)
        recode[kept] = np.arange(len(kept))
        inside = recode[codes] >= 0
        codes, rows = recode[codes[inside]], rows[inside]
        by_term = np.argsort(codes * max(1, modelled) + rows, kind="stable")
        by_row = np.argsort(rows * max(1, len(kept)) + codes, kind="stable")
        times = snap.times[first:end]
        together = ~(np.abs(np.diff(times)) > SITTING_GAP_SECONDS)
        vectors = snap.vectors
        sample = _evenly(np.arange(first, end), MEAN_ROWS)
        mean = (
            np.asarray(vectors[sample], dtype=np.float32).mean(axis=0)
            if len(sample) and len(vectors) >= end
            else np.zeros(vectors.shape[1] if vectors.ndim == 2 else 0, dtype=np.float32)
        )
        return cls(
            first=first,
            documents=end,
            code_of={names[k]: code for code, k in enumerate(kept.tolist())},
            names=[names[k] for k in kept.tolist()],
            frequency=frequency[kept].astype(np.int32),
            term_starts=_starts(codes, len(kept)),
            term_rows=rows[by_term].astype(np.int32),
            row_starts=_starts(rows, modelled),
            row_terms=codes[by_row].astype(np.int32),
            together=together,
            mean=mean,
        )

    def stale_for(self, count: int) -> bool:
        """Whether an index of ``count`` messages has grown past what this model may answer."""
        return count < self.documents or count - self.documents > max(
            MIN_SUPPORT, REBUILD_SHARE * (self.documents - self.first)
        )

    def related(self, term: str, vectors: npt.NDArray[np.floating]) -> Related:
        """The terms of the thread related to ``term``, best first, with their relatedness.

        ``vectors``: the index's message vectors now (a model keeps none of its own).
        """
        with self._lock:
            known = self._cache.get(term)
            if known is not None:
                self._cache.move_to_end(term)
                return known
        found = self._related(term, vectors)
        with self._lock:
            self._cache[term] = found
            while len(self._cache) > CACHED_TERMS:
                self._cache.popitem(last=False)
        return found

    def expansion(
        self, terms: Iterable[str], vectors: npt.NDArray[np.floating]
    ) -> dict[str, float]:
        """The related terms of a query's ``terms``, each with its weight in the query.

        A weight is ``EXPANSION_WEIGHT ×`` its best relatedness, under the query's own terms'
        (1); terms of the query itself are not added; the ``MAX_EXPANSION`` heaviest are kept.
        """
        own = set(terms)
        weights: dict[str, float] = {}
        for term in own:
            for other, relatedness in self.related(term, vectors):
                if other not in own:
                    weight = EXPANSION_WEIGHT * relatedness
                    weights[other] = max(weight, weights.get(other, 0.0))
        kept: dict[str, float] = {}
        for other, weight in sorted(weights.items(), key=lambda item: (-item[1], item[0])):
            # A Chinese pair overlapping the query's words or a heavier added pair is a piece
            # of the same word ("近工" of 最近工作 beside 工作).
            if len(kept) == MAX_EXPANSION:
                break
            if not any(_pieces_of_one_word(other, word) for word in [*own, *kept]):
                kept[other] = round(weight, 4)
        return kept

    def _related(self, term: str, vectors: npt.NDArray[np.floating]) -> Related:
        code = self.code_of.get(term)
        if code is None or len(vectors) < self.documents:
            return ()
        own = self._rows_of(code)
        context = _with_neighbours(own, self.together)
        count = len(self.names)
        held = np.bincount(_gather(self.row_starts, self.row_terms, context), minlength=count)
        beside = np.bincount(_gather(self.row_starts, self.row_terms, own), minlength=count)
        held[code] = 0
        reach = self.frequency - beside
        candidates = np.flatnonzero((held >= MIN_SUPPORT) & (reach > 0))
        if not len(candidates):
            return ()
        association = held[candidates] / np.sqrt(len(context) * self.frequency[candidates])
        order = np.argsort(-association, kind="stable")
        best = [
            int(c)
            for c in candidates[order[: 2 * CANDIDATES]].tolist()
            if not _pieces_of_one_word(term, self.names[c])
        ][:CANDIDATES]
        if not best:
            return ()
        chosen = np.asarray(best, dtype=np.int64)
        association = held[chosen] / np.sqrt(len(context) * self.frequency[chosen])
        # A candidate's own messages away from the term: its centroid then owes nothing to
        # the messages they share, and says whether it is used about the same things.
        away = np.ones(self.documents - self.first, dtype=bool)
        away[own] = False
        samples = [rows[away[rows]] for rows in map(self._rows_of, best)]
        centres = self._centroids([own, *samples], vectors)
        agreement = centres[1:] @ centres[0]
        relatedness = np.sqrt(association * np.clip(agreement, 0.0, None))
        kept: list[tuple[str, float]] = []
        for k in np.argsort(-relatedness, kind="stable").tolist():
            name = self.names[best[k]]
            if relatedness[k] < MIN_RELATED or len(kept) == PER_TERM:
                break
            # Two overlapping Chinese pairs are pieces of one word: the better one stands.
            if not any(_pieces_of_one_word(name, other) for other, _ in kept):
                kept.append((name, round(float(relatedness[k]), 4)))
        return tuple(kept)

    def sample_rows(self, term: str, most: int) -> list[int]:
        """The index rows of up to ``most`` of the messages holding ``term``, evenly taken."""
        code = self.code_of.get(term)
        if code is None:
            return []
        return [self.first + int(r) for r in _evenly(self._rows_of(code), most).tolist()]

    def _rows_of(self, code: int) -> npt.NDArray[np.int64]:
        return self.term_rows[self.term_starts[code] : self.term_starts[code + 1]].astype(np.int64)

    def _centroids(
        self, groups: list[npt.NDArray[np.int64]], vectors: npt.NDArray[np.floating]
    ) -> npt.NDArray[np.float32]:
        """The unit centroid of each group of modelled rows, the thread's mean taken out.

        At most ``CENTROID_ROWS`` of each group, evenly taken; one gather for all groups.
        """
        taken = [_evenly(rows, CENTROID_ROWS) for rows in groups]
        sizes = np.asarray([len(rows) for rows in taken])
        rows = np.concatenate(taken)
        gathered = np.asarray(vectors[self.first + rows], dtype=np.float32)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        centres = np.add.reduceat(gathered, starts, axis=0) / sizes[:, None] - self.mean
        norms = np.linalg.norm(centres, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = (centres / np.where(norms > 0, norms, 1.0)).astype(
            np.float32
        )
        return unit


_MODELS: weakref.WeakKeyDictionary[MessageIndex, RelatedTerms] = weakref.WeakKeyDictionary()
"""One model per open index: it goes when the index goes (a thread closed, a branch left)."""
_MODELS_LOCK = threading.Lock()


def related_terms(index: MessageIndex) -> RelatedTerms:
    """The related-terms model of ``index`` (a dry run's overlay: of its base), built if stale.

    Kept with the index and rebuilt once the thread has grown by ``REBUILD_SHARE`` since.
    """
    base = index.base if isinstance(index, OverlayMessageIndex) else index
    count = len(base)
    with _MODELS_LOCK:
        model = _MODELS.get(base)
        if model is not None and not model.stale_for(count):
            return model
    model = RelatedTerms.of(base)
    with _MODELS_LOCK:
        _MODELS[base] = model
    return model


def query_expansion(index: MessageIndex, query: str) -> dict[str, float]:
    """The related terms to add to ``query``'s own in ``index``'s thread, with their weights."""
    terms = lexical_terms(query)
    if not terms:
        return {}
    base = index.base if isinstance(index, OverlayMessageIndex) else index
    model = related_terms(base)
    return model.expansion(terms, base.vectors())


def related_words(index: MessageIndex, store: TopicStore, query: str) -> list[str]:
    """The words a search for ``query`` also looks for in this thread, heaviest first.

    For people and models (the ``search`` command's line, the ``search_memory`` tool's
    answer): a term is an English stem or a Chinese pair (``proces``), so each is shown as the
    word the thread writes most for it, read from a few of its messages (``process``).
    """
    base = index.base if isinstance(index, OverlayMessageIndex) else index
    expansion = query_expansion(base, query)
    if not expansion:
        return []
    model = related_terms(base)
    rows = {term: model.sample_rows(term, SURFACE_MESSAGES) for term in expansion}
    ids = {term: [base.ids[r] for r in found if r < len(base.ids)] for term, found in rows.items()}
    texts = store.get_messages([i for found in ids.values() for i in found])
    words: list[str] = []
    for term in expansion:
        written = (texts[i]["content"] for i in ids[term] if i in texts)
        words.append(surface_word(term, written))
    return list(dict.fromkeys(words))


def surface_word(term: str, texts: Iterable[str]) -> str:
    """The word of ``texts`` written most often for the lexical ``term`` (``term`` if none)."""
    if _CJK.search(term):
        return term
    seen: Counter[str] = Counter()
    for text in texts:
        seen.update(w for w in _WORD.findall(text.lower()) if stem(w) == term)
    return seen.most_common(1)[0][0] if seen else term


def _navigable(term: str) -> bool:
    """A term that may expand or be added: two characters or more, not a number.

    A Chinese pair holding a particle ("的训", "你去") or making a function word ("我们") is
    the seam between two words or a word that navigates nowhere: left out.
    """
    if len(term) < 2 or term.isdigit():
        return False
    if _CJK.search(term):
        return term not in CHINESE_STOP_WORDS and not set(term) & _PARTICLES
    return True


def _pieces_of_one_word(term: str, other: str) -> bool:
    """Chinese pairs sharing a character: overlapping pieces of one word, not two words."""
    return bool(_CJK.search(term) or _CJK.search(other)) and bool(set(term) & set(other))


def _starts(owners: npt.NDArray[np.int64], count: int) -> Ints:
    """Where each owner's run starts in pairs sorted by owner (one more entry: the end)."""
    counts = np.bincount(owners, minlength=count)[:count]
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)


def _gather(starts: Ints, values: Ints, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The values of every row of ``rows`` (runs ``starts[r]:starts[r + 1]``), concatenated."""
    begin = starts[rows].astype(np.int64)
    lengths = starts[rows + 1].astype(np.int64) - begin
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    shift = np.repeat(begin - (np.cumsum(lengths) - lengths), lengths)
    return values[shift + np.arange(total)].astype(np.int64)


def _with_neighbours(
    rows: npt.NDArray[np.int64], together: npt.NDArray[np.bool_]
) -> npt.NDArray[np.int64]:
    """``rows`` and their neighbours of the same sitting, distinct and ascending."""
    count = len(together) + 1
    before = rows[rows > 0]
    before = before[together[before - 1]] - 1
    after = rows[rows < count - 1]
    after = after[together[after]] + 1
    return np.unique(np.concatenate([rows, before, after]))


def _evenly(rows: npt.NDArray[np.int64], most: int) -> npt.NDArray[np.int64]:
    """At most ``most`` of ``rows``, evenly spread (all of them when fewer)."""
    if len(rows) <= most:
        return rows
    return rows[np.arange(most) * (len(rows) - 1) // (most - 1)]
