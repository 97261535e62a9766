"""Message-level evidence: how well every message of a thread answers the current question.

One score per message makes evidence from different topics comparable, so the main window can be
filled by value across topics instead of topic by topic (docs/budget.md). The score of a
message, for a query:

1. ``0.7 · z(cosine) + 0.3 · z(BM25)``: meaning and exact terms, each standardised over the
   whole thread so that neither scale dominates, plus ``PERIOD_WEIGHT`` (2.5) for a message
   sent in a period the question names ("on March 5": ``retrieval/period_evidence.py``);
2. plus ``0.3 ×`` the better of its two neighbours' scores (same sitting: at most 30 minutes
   apart): a short reply ("Yes, last Friday!") is evidence when the turn it answers is;
3. plus ``0.3 ×`` the mean of the three best scores of its topic: the topic's relevance is a
   prior on its messages (for the unsplit messages, their region counts as one group; for a
   subtopic, half its own group's and half the topic it was divided from, see
   ``subtopics/families.py``).

On the LoCoMo dev conversations the last two steps add about 0.08 evidence recall at 2,000
tokens to the first alone (``benchmarks/README.md``, "How the evidence score was chosen").

From ``LARGE_INDEX`` (20,000) indexed messages on, only candidates are scored, so a search
costs about the same at 100,000 messages as at 20,000: the best ``CANDIDATES`` by cosine among
the rows of the clusters nearest the query (``retrieval/projection.py``), the best by BM25
among each query term's best documents (``BM25.top_documents``), the best by cosine among the
messages sent in a period the question names, and their neighbours. Their
cosines and BM25 scores are exact, standardised with the mean and deviation of an exact sample
of the thread; the topic prior ranks the candidates. Every other message gets a floor value
(``Evidence.candidates``), and only the candidates' values are stored
(``retrieval/candidate_values.py``): no score a query returns fills an array the thread's
length. Below that size every score is exact, bit for bit as when the recall figures were
measured (``tests/test_evidence_exact.py``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from langgraph_topics.activation.date_periods import DatePeriod
from langgraph_topics.retrieval.bm25 import score_documents
from langgraph_topics.retrieval.candidate_values import CandidateValues
from langgraph_topics.retrieval.lexical import lexical_terms
from langgraph_topics.retrieval.message_index import (
    MessageIndex,
    OverlayMessageIndex,
    Snapshot,
)
from langgraph_topics.retrieval.period_evidence import PERIOD_WEIGHT, Span, lived_spans, within
from langgraph_topics.retrieval.projection import best_positions
from langgraph_topics.retrieval.row_dots import row_dots
from langgraph_topics.retrieval.unsplit_rows import UnsplitRowsCache
from langgraph_topics.roles.native.vectors import VectorCache
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.protocols import Embedder

Floats = npt.NDArray[np.float64]
Values = Floats | CandidateValues
"""One value per message: an array, or on a large index the candidates' values only."""
RELEVANCE_CENTRE = 1.5
"""The fused score that maps to relevance 0.5: one and a half deviations above the thread's
mean (about the best twentieth of its messages), so a topic whose best message stands out this
much clears the 0.3 reference threshold."""
CANDIDATES = 400
"""On a large index, how many messages the first pass keeps by cosine and by BM25 each (with
their neighbours, at most 2,400 rows are then scored exactly: gathering rows costs more than
the product itself)."""
EXPANDED = CANDIDATES // 4
"""On a large index, a related term's best documents added to the BM25 candidates."""
UNSPLIT_GROUP = ""
"""The group of the unsplit messages (they belong to no topic yet)."""


class Positions(Mapping[str, int]):
    """Where each scored message sits in the score arrays, without copying the index's map.

    The base index's own id map is shared (a search over 100,000 messages must not build a
    100,000-entry dict per query); ids it gained after the scores were computed are out of
    bounds and so unknown here.
    """

    def __init__(self, base: Mapping[str, int], count: int, extra: Mapping[str, int]) -> None:
        self._base = base
        self._count = count
        self._extra = extra

    def __getitem__(self, message_id: str) -> int:
        found = self._extra.get(message_id)
        if found is not None:
            return found
        position = self._base[message_id]
        if position >= self._count:
            raise KeyError(message_id)
        return position

    def get(self, message_id: str, default: int | None = None) -> int | None:  # type: ignore[override]
        """A message's position, or ``default``, as ``Mapping.get`` answers.

        Without ``Mapping.get``'s ``KeyError`` round trip: the assembler and the topic windows
        ask for every message.
        """
        found = self._extra.get(message_id)
        if found is not None:
            return found
        position = self._base.get(message_id)
        return position if position is not None and position < self._count else default

    def __contains__(self, message_id: object) -> bool:
        if not isinstance(message_id, str):
            return False
        if message_id in self._extra:
            return True
        position = self._base.get(message_id)
        return position is not None and position < self._count

    def __iter__(self) -> Iterator[str]:
        yield from (i for i, p in self._base.items() if p < self._count)
        yield from self._extra

    def __len__(self) -> int:
        return self._count + len(self._extra)


@dataclass(frozen=True)
class Evidence:
    """Scores of every message of a thread (indexed and unsplit) for one query."""

    query: str
    query_vector: npt.NDArray[np.float32]
    base_codes: npt.NDArray[np.int64]
    """The topic code of the first messages (on a large index, the index's own array)."""
    extra_codes: npt.NDArray[np.int64]
    """The topic codes of the messages after them (the unsplit ones; none on the exact route)."""
    group_names: list[str]
    """Topic ids by code (``UNSPLIT_GROUP`` for the unsplit messages)."""
    position: Mapping[str, int]
    score: Values
    """The fused score (see the module docstring); higher is better, unbounded."""
    relevance: Values
    """The fused score mapped onto [0, 1] (a logistic curve, see ``RELEVANCE_CENTRE``)."""
    dense: Values
    """Cosine similarity of each message to the query."""
    candidates: npt.NDArray[np.int64] | None = None
    """The positions scored, ascending (``None``: every one). On a large index only the
    candidates are; every other message holds the floor values: the lowest candidate's score
    and relevance, and the lowest cosine of the messages chosen by cosine (no message outside
    is known to be higher), so ranks and comparisons among candidates are those of the scores
    computed for them."""

    def group_of(self, position: int) -> str:
        """The topic id of the message at ``position`` (``UNSPLIT_GROUP`` when unsplit)."""
        base = len(self.base_codes)
        code = self.base_codes[position] if position < base else self.extra_codes[position - base]
        return self.group_names[int(code)]

    def relevance_of(self, message_id: str) -> float:
        """A message's relevance in [0, 1] (0 for a message not scored)."""
        position = self.position.get(message_id)
        return 0.0 if position is None else float(self.relevance[position])

    def rank_at(self, position: int) -> int:
        """The thread-wide rank of the message at ``position`` (0 = best).

        Counted on demand: a turn asks for a few ranks, and ranking the whole thread for them
        would cost a sort of every message.
        """
        return int(np.count_nonzero(self._scored() > self.score[position]))

    def rank_of(self, message_id: str) -> int:
        """A message's thread-wide rank (the number of messages when it was not scored)."""
        position = self.position.get(message_id)
        return len(self.score) if position is None else self.rank_at(position)

    def ranked(self, message_ids: Sequence[str]) -> list[str]:
        """The given ids that were scored, best first (ties in the given order)."""
        known = [i for i in message_ids if i in self.position]
        # One read of every score (a topic's ids are thousands at 100,000 messages).
        places = np.fromiter((self.position[i] for i in known), np.int64, len(known))
        order = np.argsort(-np.asarray(self.score[places]), kind="stable")
        return [known[k] for k in order.tolist()]

    def top(self, count: int) -> list[int]:
        """Positions of the ``count`` best messages, best first."""
        scored = self._scored()
        if self.candidates is not None:
            # Floor messages come after every candidate, in position order.
            order = self.candidates[np.argsort(-scored, kind="stable")]
            if count <= len(order):
                return [int(p) for p in order[: max(count, 0)]]
            rest = np.setdiff1d(np.arange(len(self.score)), self.candidates)
            return [int(p) for p in np.concatenate([order, rest])[:count]]
        count = min(count, len(scored))
        if count <= 0:
            return []
        head = np.argpartition(-scored, count - 1)[:count]
        return [int(p) for p in head[np.argsort(-scored[head], kind="stable")]]

    def _scored(self) -> Floats:
        """The scores computed: every message's, or on a large index the candidates'."""
        if isinstance(self.score, CandidateValues):
            return self.score.values
        return self.score if self.candidates is None else self.score[self.candidates]


class EvidenceScorer:
    """Scores a thread's messages for a query, once per query and state of the thread.

    The topic windows of one turn run in parallel and all need the same scores: the first one
    computes them and the others reuse them.

    Args:
        embedder: Embeds the query and the unsplit messages (the index's own embedder).
        dense_weight: Weight of the standardised cosine; BM25 gets the rest.
        neighbour_weight: Weight of the better neighbour's score.
        topic_weight: Weight of the mean of the topic's three best scores.
        sitting_gap_seconds: Neighbours further apart than this are not of the same sitting.
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        dense_weight: float = 0.7,
        neighbour_weight: float = 0.3,
        topic_weight: float = 0.3,
        sitting_gap_seconds: float = 1800.0,
    ) -> None:
        self.dense_weight = dense_weight
        self.neighbour_weight = neighbour_weight
        self.topic_weight = topic_weight
        self.sitting_gap_seconds = sitting_gap_seconds
        self.vectors = VectorCache(embedder)
        self.unsplit = UnsplitRowsCache(self.vectors)
        self._results: OrderedDict[tuple[object, ...], Evidence] = OrderedDict()
        self._lock = threading.Lock()

    def score(
        self,
        index: MessageIndex,
        query: str,
        unsplit: Sequence[StoredMessage],
        families: Mapping[str, str] | None = None,
        *,
        periods: Sequence[DatePeriod] = (),
        expansion: Mapping[str, float] | None = None,
    ) -> Evidence:
        """Score the indexed messages and ``unsplit`` (in conversation order) for ``query``.

        ``families`` maps subtopics to the topic they were divided from: the topic prior of
        their messages is that topic's (``subtopics/families.py``). ``periods``: those the
        question names; the messages sent in them score higher (``period_evidence.py``).
        ``expansion``: terms related to the query's (``retrieval/related_terms.py``), each
        with its weight in the BM25 score (the query's own terms weigh 1); without it, every
        score is as before.
        """
        base = index.base if isinstance(index, OverlayMessageIndex) else index
        # Tokens, not id(): an index freed after a dry run may leave its id to a new one.
        key = (
            index.token,
            len(base),
            len(index),
            query,
            tuple((m["id"], m["content"]) for m in unsplit),
            tuple(sorted(families.items())) if families else (),
            tuple(periods),
            tuple(sorted(expansion.items())) if expansion else (),
        )
        with self._lock:
            found = self._results.get(key)
            if found is not None:
                self._results.move_to_end(key)
                return found
            evidence = self._compute(
                index, query, unsplit, families or {}, periods, expansion or {}
            )
            self._results[key] = evidence
            # A few turns' worth: one per thread in flight (each holds a few arrays per message).
            while len(self._results) > 4:
                self._results.popitem(last=False)
            return evidence

    def _compute(
        self,
        index: MessageIndex,
        query: str,
        unsplit: Sequence[StoredMessage],
        families: Mapping[str, str],
        periods: Sequence[DatePeriod],
        expansion: Mapping[str, float],
    ) -> Evidence:
        base = index.base if isinstance(index, OverlayMessageIndex) else index
        snap = base.snapshot()
        base_count = snap.count
        names = list(snap.topic_names)
        code_of = {name: code for code, name in enumerate(names)}

        def code(group: str) -> int:
            if group not in code_of:
                code_of[group] = len(names)
                names.append(group)
            return code_of[group]

        rows = self.unsplit.rows(unsplit)
        query_vector = self.vectors.embed([(("query", query), query or " ")])[0]
        terms = lexical_terms(query)
        if isinstance(index, OverlayMessageIndex):  # a dry run's split, indexed in memory
            view = index.snapshot()
            overlay_codes = [code(view.topic_names[c]) for c in view.codes]
            unsplit_code = [code(UNSPLIT_GROUP)] * len(rows) if len(rows) else []
            extra_ids = index.ids[: view.count] + rows.ids
            extra_codes_array = np.asarray(overlay_codes + unsplit_code, dtype=np.int64)
            extra_times_array = np.concatenate([view.times, rows.times])
            extra_vectors = [*view.vectors, *rows.vectors]
            extra_dense = (
                (np.stack(extra_vectors) @ query_vector).astype(np.float64)
                if extra_vectors
                else np.zeros(0)
            )
            documents = [*index.terms, *rows.terms]
            extra_lex = _weighted(
                lambda t: score_documents(snap.lexical, t, documents), terms, expansion
            )
        else:
            # The common case, without a list per message: the rows are kept between turns.
            extra_ids = rows.ids
            extra_codes_array = np.full(
                len(rows), code(UNSPLIT_GROUP) if len(rows) else 0, dtype=np.int64
            )
            extra_times_array = rows.times
            extra_dense = (
                (rows.vectors @ query_vector).astype(np.float64) if len(rows) else np.zeros(0)
            )
            extra_lex = _weighted(lambda t: rows.counts.scores(snap.lexical, t), terms, expansion)
        positions = Positions(
            base.position,
            base_count,
            {message_id: base_count + i for i, message_id in enumerate(extra_ids)},
        )
        spans = (
            lived_spans(periods, np.concatenate([snap.times[:base_count], extra_times_array]))
            if periods
            else []
        )
        if snap.projection is not None:
            evidence = self._sparse(
                _LargeSearch(snap, query_vector, terms, expansion, spans),
                _Rows(extra_dense, extra_lex, extra_codes_array, extra_times_array),
                names,
                families,
                query,
                positions,
                spans,
            )
            base.widen()  # once this first search is done, not beside it
            return evidence
        # The lexical index may have grown since the snapshot: only its first rows count.
        lex_base = _weighted(snap.lexical.scores, terms, expansion)[:base_count]
        if len(snap.vectors):
            dense_base = row_dots(np.asarray(snap.vectors, np.float32), query_vector).astype(
                np.float64
            )
        else:
            dense_base = np.zeros(0)
        dense = np.concatenate([dense_base, extra_dense])
        lex = np.concatenate([lex_base, extra_lex])
        codes = np.concatenate([snap.codes, extra_codes_array])
        times = np.concatenate([snap.times, extra_times_array])
        own = self._own(dense, lex)
        if spans:
            own = own + PERIOD_WEIGHT * within(times, spans)
        fused = own + self.neighbour_weight * _best_neighbour(own, times, self.sitting_gap_seconds)
        fused = fused + self.topic_weight * _topic_prior(own, codes, names, families)
        return Evidence(
            query=query,
            query_vector=query_vector,
            base_codes=codes,
            extra_codes=np.zeros(0, dtype=np.int64),
            group_names=names,
            position=positions,
            score=fused,
            relevance=_relevance(fused),
            dense=dense,
        )

    def _own(
        self,
        dense: Floats,
        lex: Floats,
        stats: tuple[tuple[float, float], tuple[float, float]] | None = None,
    ) -> Floats:
        """A message's own score: standardised cosine and BM25, weighted.

        ``stats``: the thread's (mean, deviation) of each, when the values are not all of it.
        """
        dense_stats, lex_stats = stats if stats is not None else (None, None)
        return self.dense_weight * _standard(dense, dense_stats) + (
            1 - self.dense_weight
        ) * _standard(lex, lex_stats)

    def _sparse(
        self,
        large: _LargeSearch,
        extra: _Rows,
        names: list[str],
        families: Mapping[str, str],
        query: str,
        positions: Positions,
        spans: Sequence[Span] = (),
    ) -> Evidence:
        """A large index's evidence: the candidates scored as the exact route scores them.

        Each candidate's own score needs its neighbours' (``large.rows`` reaches one row
        further than the candidates); the topic prior ranks the candidates (and the unsplit
        messages) only: a topic's best messages are among them.
        """
        snap = large.snap
        base_count = snap.count
        rows = large.rows
        dense_stats, lex_stats = large.statistics()
        own = np.concatenate(
            [
                self._own(large.dense, large.lex, (dense_stats, lex_stats)),
                self._own(extra.dense, extra.lex, (dense_stats, lex_stats)),
            ]
        )
        at = np.concatenate([rows, base_count + np.arange(len(extra.dense), dtype=np.int64)])
        times = np.concatenate([snap.times[rows], extra.times])
        if spans:
            own = own + PERIOD_WEIGHT * within(times, spans)
        codes = np.concatenate([snap.codes[rows], extra.codes])
        together = (np.diff(at) == 1) & ~(np.abs(np.diff(times)) > self.sitting_gap_seconds)
        fused = own + self.neighbour_weight * _best_neighbour_where(own, together)
        kept = np.ones(len(at), dtype=bool)
        kept[: len(rows)] = large.exact
        own, fused, codes, at = own[kept], fused[kept], codes[kept], at[kept]
        fused = fused + self.topic_weight * _topic_prior(own, codes, names, families)
        dense = np.concatenate([large.dense, extra.dense])[kept]
        total = base_count + len(extra.dense)
        floor = float(fused.min()) if len(fused) else 0.0
        return Evidence(
            query=query,
            query_vector=large.query_vector,
            base_codes=snap.codes,
            extra_codes=extra.codes,
            group_names=names,
            position=positions,
            score=CandidateValues(at, fused, floor, total),
            relevance=CandidateValues(
                at, _relevance(fused), float(_relevance(np.asarray([floor]))[0]), total
            ),
            dense=CandidateValues(at, dense, large.dense_floor(), total),
            candidates=at,
        )


@dataclass(frozen=True)
class _Rows:
    """Scores and places of the messages outside the index (a dry run's, the unsplit)."""

    dense: Floats
    lex: Floats
    codes: npt.NDArray[np.int64]
    times: Floats


class _LargeSearch:
    """The candidates of a large index for one query, with their exact cosines and BM25.

    Candidates: the best ``CANDIDATES`` by approximate cosine among the rows of the nearest
    clusters (``Projection.nearest``), and the best by BM25 among each query term's best
    documents (``BM25.top_documents``), each with its two neighbours (``exact``); their own
    neighbours are scored too (``rows``) so that every candidate's best neighbour is known.
    Nothing here reads every row's vector (a period the question names compares their times).
    """

    def __init__(
        self,
        snap: Snapshot,
        query_vector: npt.NDArray[np.float32],
        terms: Sequence[str],
        expansion: Mapping[str, float],
        spans: Sequence[Span] = (),
    ) -> None:
        assert snap.projection is not None
        self.snap = snap
        self.query_vector = query_vector
        self.terms = terms
        self.expansion = expansion
        count = snap.count
        projection = snap.projection
        by_dense = projection.nearest(query_vector, CANDIDATES)
        by_dense = by_dense[by_dense < count]
        pool = snap.lexical.top_documents(terms, CANDIDATES)
        if expansion:  # a related term's best documents may hold none of the query's terms
            pool = _ascending(
                np.concatenate([pool, snap.lexical.top_documents(list(expansion), EXPANDED)])
            )
        pool = pool[pool < count]
        pool_scores = self.lex_at(pool)
        best = best_positions(pool_scores, CANDIDATES)
        by_lex = pool[best[pool_scores[best] > 0]]
        chosen = _ascending(np.concatenate([by_dense, by_lex, self._in_periods(spans)]))
        self.rows = _around(chosen, 2, count)
        # Exact cosines for the scored rows (the chosen and their neighbours); their outer
        # neighbours (whose scores only feed the scored rows' best neighbour) keep the
        # shadows' approximation. A row is scored when the first chosen row from one before
        # it on is at most one after it: a binary search per row, not a second spread and
        # a set test.
        following = np.append(chosen, count + 2)[np.searchsorted(chosen, self.rows - 1)]
        exact = following <= self.rows + 1
        self.dense = projection.approximate(query_vector, self.rows)
        self.dense[exact] = snap.exact_dots(self.rows[exact], query_vector)
        self.exact = exact
        self.lex = self.lex_at(self.rows)
        self._by_dense = np.searchsorted(self.rows, by_dense)

    def _in_periods(self, spans: Sequence[Span]) -> npt.NDArray[np.int64]:
        """The best ``CANDIDATES`` rows sent in an asked period, by approximate cosine.

        A question naming a day asks for that day's messages whatever their words; one
        comparison per row's time, not a product.
        """
        if not spans:
            return np.zeros(0, dtype=np.int64)
        rows = np.flatnonzero(within(self.snap.times[: self.snap.count], spans)).astype(np.int64)
        if len(rows) <= CANDIDATES:
            return rows
        assert self.snap.projection is not None
        near = self.snap.projection.approximate(self.query_vector, rows)
        return rows[best_positions(near, CANDIDATES)]

    def lex_at(self, rows: npt.NDArray[np.int64]) -> Floats:
        """The BM25 scores of some rows (ascending), related terms weighted in."""
        return _weighted(lambda t: self.snap.lexical.scores_at(t, rows), self.terms, self.expansion)

    def statistics(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """The (mean, deviation) of the thread's cosines and BM25 scores, from its sample."""
        projection = self.snap.projection
        assert projection is not None
        lex = self.lex_at(projection.sample_rows)
        return projection.cosine_statistics(self.query_vector), (
            float(lex.mean()),
            float(lex.std()),
        )

    def dense_floor(self) -> float:
        """The lowest exact cosine of the rows chosen by cosine (0 without any)."""
        return float(self.dense[self._by_dense].min()) if len(self._by_dense) else 0.0


def _weighted(
    scores: Callable[[Sequence[str]], Floats],
    terms: Sequence[str],
    expansion: Mapping[str, float],
) -> Floats:
    """``scores(terms)`` plus each related term's scores times its weight.

    Without related terms this is ``scores(terms)`` itself, bit for bit.
    """
    total = scores(terms)
    for term, weight in expansion.items():
        total = total + weight * scores((term,))
    return total


def _relevance(fused: Floats) -> Floats:
    # A score far under the centre overflows exp to inf, and its relevance is then exactly 0:
    # the right value, without numpy's warning on the user's console.
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-(fused - RELEVANCE_CENTRE)))


def _around(rows: npt.NDArray[np.int64], reach: int, count: int) -> npt.NDArray[np.int64]:
    """``rows`` (within ``[0, count)``) and the rows up to ``reach`` away, ascending.

    Marked on a mask of the whole index: a few thousand writes and one scan cost half the
    sort of every shifted copy.
    """
    marked = np.zeros(count + 2 * reach, dtype=bool)
    for step in range(2 * reach + 1):
        marked[rows + step] = True
    return np.flatnonzero(marked[reach : count + reach]).astype(np.int64)


def _ascending(rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The distinct ``rows``, ascending (sorted: ``np.unique`` hashes, slower here)."""
    ordered = np.sort(rows.astype(np.int64))
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]] if len(ordered) else ordered


def _best_neighbour_where(scores: Floats, together: npt.NDArray[np.bool_]) -> Floats:
    """:func:`_best_neighbour` where ``together[i]`` says whether rows i and i + 1 are."""
    count = len(scores)
    if count < 2:
        return np.zeros(count)
    previous = np.full(count, -np.inf)
    following = np.full(count, -np.inf)
    previous[1:] = np.where(together, scores[:-1], -np.inf)
    following[:-1] = np.where(together, scores[1:], -np.inf)
    best = np.maximum(previous, following)
    return np.where(np.isfinite(best), best, 0.0)


def _standard(values: Floats, stats: tuple[float, float] | None = None) -> Floats:
    """Standardise to mean 0 and deviation 1 (all zeros when the values do not vary).

    ``stats`` gives the (mean, deviation) to use instead of the values' own.
    """
    if len(values) == 0:
        return values
    mean, deviation = stats if stats is not None else (float(values.mean()), float(values.std()))
    return (values - mean) / deviation if deviation > 0 else np.zeros_like(values)


def _best_neighbour(scores: Floats, stamps: Floats, gap: float) -> Floats:
    """The better score of each message's neighbours of the same sitting (0 without any)."""
    if len(scores) < 2:
        return np.zeros(len(scores))
    # An unknown time (NaN) keeps neighbours together.
    return _best_neighbour_where(scores, ~(np.abs(np.diff(stamps)) > gap))


SUBTOPIC_PRIOR_SHARE = 0.5
"""The share of a subtopic's own group in its prior; its family (the root) has the rest."""


def _family_codes(
    codes: npt.NDArray[np.int64], names: Sequence[str], families: Mapping[str, str]
) -> tuple[npt.NDArray[np.int64], int]:
    """Each message's prior group: its topic's family (the root it was divided from), coded.

    Without subtopics these are the topic codes themselves.
    """
    if not families:
        return codes, len(names)
    family_of: dict[str, int] = {}
    remap = np.empty(len(names), dtype=np.int64)
    for code, name in enumerate(names):
        remap[code] = family_of.setdefault(families.get(name, name), len(family_of))
    return remap[codes], len(family_of)


def _topic_prior(
    own: Floats, codes: npt.NDArray[np.int64], names: Sequence[str], families: Mapping[str, str]
) -> Floats:
    """Each message's topic prior: the mean of the three best own scores of its group.

    A subtopic's prior is half its own group's and half its family's: the family's keeps its
    messages level with the unsplit ones, its own tells its siblings apart.
    """
    prior = _group_means(own, codes, len(names), 3)[codes]
    if families:
        family_codes, family_count = _family_codes(codes, names, families)
        family = _group_means(own, family_codes, family_count, 3)[family_codes]
        prior = SUBTOPIC_PRIOR_SHARE * prior + (1 - SUBTOPIC_PRIOR_SHARE) * family
    return prior


def _group_means(scores: Floats, codes: npt.NDArray[np.int64], groups: int, top: int) -> Floats:
    """Per group code, the mean of its ``top`` best scores (0 for a group without scores)."""
    means = np.zeros(groups)
    if len(scores) == 0:
        return means
    # One float key, group first and score second (scores are standardised, far under 1e4):
    # a single argsort is several times faster than lexsort on two keys.
    order = np.argsort(codes * 1e4 - np.clip(scores, -1e3, 1e3))
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    ends = np.r_[starts[1:], len(order)]
    total = np.zeros(len(starts))
    taken = np.zeros(len(starts))
    for offset in range(top):
        inside = starts + offset < ends
        picks = np.where(inside, starts + offset, 0)
        total += np.where(inside, scores[order[picks]], 0.0)
        taken += inside
    means[sorted_codes[starts]] = total / np.maximum(taken, 1)
    return means
