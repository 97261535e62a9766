"""Native topic window: scores a topic against the unsplit messages (seed 000 §4.2, §6.1).

The query is the unsplit conversation with the newest user message weighted most. Every topic
message is scored by cosine similarity to it (plus a small keyword bonus), the raw evidence is
mapped onto the spec's grey scale, and above the reference threshold the best messages are
referenced (each with its unit partner) and an extractive summary is written.

The raw score is ``0.5·best + 0.3·mean(top 3) + 0.2·brief``: the best message (and its close
runners-up, so one lucky sentence does not decide alone) plus the topic's name and brief, each
a query-weighted cosine (the messages' with a keyword bonus). It is then mapped onto the grey
scale by :func:`~langgraph_topics.roles.native.calibration.calibrate`: unrelated material lands
under the 0.3 reference threshold, clearly related material at 0.55 or more.
"""

from __future__ import annotations

import functools
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from langgraph_topics.keywords import extract_keywords, keyword_overlap
from langgraph_topics.retrieval.bm25 import BM25
from langgraph_topics.roles.native.calibration import calibrate
from langgraph_topics.roles.native.text import clip, is_chinese, message_text, split_sentences
from langgraph_topics.roles.native.vectors import VECTOR_CACHE_BYTES, Matrix, Vector, VectorCache
from langgraph_topics.roles.protocols import TopicInfo, TopicVerdict
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.state.units import group_units
from langgraph_topics.stores.protocols import Embedder
from langgraph_topics.summaries import SummaryCard
from langgraph_topics.summaries.native import native_card
from langgraph_topics.tokens import TokenCounter, default_token_counter

if TYPE_CHECKING:
    from langgraph_topics.retrieval.evidence import Evidence

TEXT_CACHE_BYTES = 2**20
"""Bound of the cache of queries and briefs (see ``NativeTopicWindow.text_cache``)."""
LEXICAL_INDEXES = 64
"""Topics whose BM25 index a topic window keeps (at most ``max_active`` are read per turn)."""
_REFERENCE_FLOOR = 0.3
"""Raw similarity under which a message is never referenced, however good the rest is."""
_RELATIVE_FLOOR = 0.7
"""Referenced messages also score at least this share of the best message."""
_SENTENCE_CHARS = 240
_RRF_K = 60
_RANK_FLOOR_SCALE = 10.0
"""How fast the rank floor of a topic's score fades with its best message's thread-wide rank."""


def rank_floor(best_rank: int) -> float:
    """The least score of a topic whose best message has this thread-wide rank.

    A topic holding one of the thread's best-matching messages is relevant to the question
    whatever its other messages say: 0.8 for the best message of the thread, 0.48 for the
    eleventh, nearly the reference threshold from the fiftieth on (and never more than that
    message's own relevance).
    """
    return 0.3 + 0.5 * math.exp(-best_rank / _RANK_FLOOR_SCALE)


@dataclass(frozen=True)
class _Query:
    vectors: Matrix
    """One row per query text (newest user message, recent tail)."""
    weights: tuple[float, ...]
    keywords: frozenset[str]
    chinese: bool


class NativeTopicWindow:
    """Judges a topic's relevance with embeddings, keywords and extractive summaries.

    Embeddings of topic messages are cached (keyed by message id and a hash of the text, because
    ids are only unique within one conversation), so evaluating the same topics every turn only
    embeds messages the cache has not seen.

    Args:
        embedder: The sentence embedder.
        reference_threshold: Under this score the verdict has no references and no summary.
        max_references: Most message ids referenced.
        summary_chars: Soft limit of the summary in characters.
        user_weight: Weight of the newest user message in the query; the recent tail gets the
            rest.
        tail_messages: How many recent messages besides the newest user message form the tail.
        keyword_weight: Weight of the keyword overlap added to a message's cosine similarity.
        cache_bytes: Most bytes of message embeddings kept in memory (a topic's messages are
            embedded once while it is read turn after turn).
        count_tokens: How a summary card's ``tokens_saved`` is counted.
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        reference_threshold: float = 0.3,
        max_references: int = 24,
        summary_chars: int = 2000,
        user_weight: float = 0.6,
        tail_messages: int = 6,
        keyword_weight: float = 0.1,
        cache_bytes: int = 2 * VECTOR_CACHE_BYTES,
        count_tokens: TokenCounter | None = None,
    ) -> None:
        self.embedder = embedder
        self.count_tokens = count_tokens or default_token_counter()
        self.reference_threshold = reference_threshold
        self.max_references = max_references
        self.summary_chars = summary_chars
        self.user_weight = user_weight
        self.tail_messages = tail_messages
        self.keyword_weight = keyword_weight
        self.message_cache = VectorCache(embedder, max_bytes=cache_bytes)
        # Queries and briefs are shared by all topics of a turn: cached so one turn embeds them
        # once, not once per topic window. A turn reads at most 20 topics' briefs: 1 MB holds
        # ~300, while 4 MB kept every brief a split rewrote until full (0.55 MB more every
        # 1,000 turns of `bench soak`).
        self.text_cache = VectorCache(embedder, max_bytes=TEXT_CACHE_BYTES)
        # One BM25 index per topic read: the most recently read ones only (every topic of a
        # long thread, each holding its messages' keywords, grew with the thread).
        self._lexical_indexes: OrderedDict[str, tuple[tuple[str, int, str], BM25]] = OrderedDict()
        self._lexical_lock = threading.Lock()

    def evaluate(
        self,
        topic: TopicInfo,
        topic_messages: Sequence[StoredMessage],
        unsplit: Sequence[StoredMessage],
    ) -> TopicVerdict:
        """Score the topic for the unsplit messages and pick what the main window needs."""
        query = self._query(unsplit)
        if query is None:
            return _silent(0.0)
        scored = [(m, message_text(m)) for m in topic_messages]
        scored = [(m, text) for m, text in scored if text]
        brief = f"{topic['name']}\n{topic['brief']}".strip()
        brief_similarity: float | None = None
        if brief:
            vectors = self.text_cache.embed([(brief, brief)])
            brief_similarity = float(self._similarity(vectors, query)[0])
        if not scored:
            return _silent(calibrate(brief_similarity or 0.0))
        vectors = self.message_cache.embed([((m["id"], hash(text)), text) for m, text in scored])
        similarities = self._similarity(vectors, query)
        bonus = np.array(
            [keyword_overlap(query.keywords, _keywords(text)) for _, text in scored],
            dtype=np.float32,
        )
        similarities = similarities + self.keyword_weight * bonus
        ranked = np.sort(similarities)[::-1]
        runners_up = float(ranked[:3].mean())
        # A topic without a name or brief yet is judged on its messages alone.
        described = runners_up if brief_similarity is None else brief_similarity
        raw = 0.5 * float(ranked[0]) + 0.3 * runners_up + 0.2 * described
        score = calibrate(float(raw))
        if score < self.reference_threshold:
            return _silent(score)
        floor = max(_REFERENCE_FLOOR, _RELATIVE_FLOOR * float(ranked[0]))
        lexical = self._lexical(topic["id"], scored).scores(sorted(query.keywords))
        order = [
            i
            for i in _fused_order(similarities, lexical)
            if similarities[i] >= floor or lexical[i] > 0
        ]
        relevant = [scored[i][0] for i in order]
        references = self._references(relevant, topic_messages)
        # The quoted messages reach the main window verbatim: summarising them again would
        # pay for the same sentences twice out of one budget (on LoCoMo at 2,000 tokens the
        # repeats crowded the quotes themselves out). The summary covers what is not quoted.
        quoted = set(references)
        rest = [m for m in relevant[: 2 * self.max_references] if m["id"] not in quoted]
        summary, card = self._summary_card(topic, topic_messages, references, rest, query)
        return {
            "relevance_score": score,
            "referenced_message_ids": references,
            "summary": summary,
            "card": card,
        }

    def evaluate_with_evidence(
        self,
        topic: TopicInfo,
        topic_messages: Sequence[StoredMessage],
        unsplit: Sequence[StoredMessage],
        evidence: Evidence,
        *,
        stored_brief: Callable[[str], Vector | None] | None = None,
    ) -> TopicVerdict:
        """Score the topic from the turn's precomputed evidence; reference its best messages.

        The score is :meth:`score_with_evidence`'s (``stored_brief`` as there). The
        references are the topic's messages in thread-wide evidence order, each with its
        relevance, so the assembler can weigh them against other topics' quotes.
        """
        ids = [m["id"] for m in topic_messages if m["id"] in evidence.position]
        score = self.score_with_evidence(topic, ids, evidence, stored_brief=stored_brief)
        if score is None:
            return self.evaluate(topic, topic_messages, unsplit)
        if score < self.reference_threshold:
            return _silent(score)
        ranked = evidence.ranked(ids)
        references = ranked[: self.max_references]
        by_id = {m["id"]: m for m in topic_messages}
        query = _Query(
            vectors=evidence.query_vector.reshape(1, -1),
            weights=(1.0,),
            keywords=frozenset(extract_keywords(evidence.query)),
            chinese=is_chinese([evidence.query]),
        )
        rest = [by_id[i] for i in ranked[self.max_references : 2 * self.max_references]]
        summary, card = self._summary_card(topic, topic_messages, references, rest, query)
        return {
            "relevance_score": score,
            "referenced_message_ids": references,
            "reference_relevance": [round(evidence.relevance_of(i), 4) for i in references],
            "summary": summary,
            "card": card,
        }

    def score_with_evidence(
        self,
        topic: TopicInfo,
        scored_ids: Sequence[str],
        evidence: Evidence,
        *,
        with_brief: bool = True,
        stored_brief: Callable[[str], Vector | None] | None = None,
    ) -> float | None:
        """The topic's score from the turn's evidence (None: no evidence to score it from).

        ``scored_ids``: the topic's messages the evidence holds. The score is the calibrated
        cosine evidence of :meth:`evaluate` (read from the index, not embedded again), raised
        to :func:`rank_floor` of the topic's best message (at most that message's relevance).
        ``with_brief=False`` leaves the brief out (as for a topic without one): nothing is
        embedded, which a score taken for every active topic each turn cannot afford.
        ``stored_brief``: the vector the topic index holds for a brief's text (the node's,
        when the index embeds with this window's embedder), taken instead of embedding it.
        """
        if not scored_ids or not evidence.query:
            return None
        positions = np.asarray([evidence.position[i] for i in scored_ids])
        dense = np.sort(evidence.dense[positions])[::-1]
        runners_up = float(dense[:3].mean())
        brief = f"{topic['name']}\n{topic['brief']}".strip() if with_brief else ""
        described = runners_up
        if brief:
            vector = self.text_cache.embed([(brief, brief)], stored=stored_brief)[0]
            described = float(vector @ evidence.query_vector)
        raw = 0.5 * float(dense[0]) + 0.3 * runners_up + 0.2 * described
        best = int(positions[np.argmax(evidence.score[positions])])
        # Strong evidence, not a mere rank: in a short thread every topic ranks near the top.
        floor = min(rank_floor(evidence.rank_at(best)), float(evidence.relevance[best]))
        return round(max(calibrate(raw), floor), 4)

    def _summary_card(
        self,
        topic: TopicInfo,
        topic_messages: Sequence[StoredMessage],
        references: Sequence[str],
        rest: Sequence[StoredMessage],
        query: _Query,
    ) -> tuple[str, SummaryCard]:
        """The summary of what is not quoted, and its card.

        When every relevant message is quoted (a small topic) no sentence is left to summarise:
        the lead alone would tell the main model nothing, so the summary names the subjects the
        card found in the quoted messages (its decisions and open items are lines of their own
        in the main window, ``prompts/card_lines.py``: said here too, they would be said twice).
        """
        summary = self._summary(topic, rest, query, topic_messages)
        card = self._card(topic, topic_messages, references, rest, summary)
        name = topic["name"] or topic["id"]
        subjects = [fact["name"] for fact in card["topics"] if fact["name"] != name]
        if "\n" in summary or not subjects:
            return summary, card
        if query.chinese:
            summary += "\n- 主题：" + "、".join(subjects)
        else:
            summary += "\n- subjects: " + ", ".join(subjects)
        return summary, self._card(topic, topic_messages, references, rest, summary)

    def _card(
        self,
        topic: TopicInfo,
        topic_messages: Sequence[StoredMessage],
        references: Sequence[str],
        rest: Sequence[StoredMessage],
        summary: str,
    ) -> SummaryCard:
        """The summary's card: facts of the messages read as relevant, in conversation order.

        The summary stands for ``rest`` only: the referenced messages are quoted verbatim.
        """
        read = set(references) | {m["id"] for m in rest}
        return native_card(
            [m for m in topic_messages if m["id"] in read],
            summary,
            name=topic["name"] or topic["id"],
            count_tokens=self.count_tokens,
            summarised=rest,
        )

    def _query(self, unsplit: Sequence[StoredMessage]) -> _Query | None:
        texts = [(m, message_text(m)) for m in unsplit]
        texts = [(m, text) for m, text in texts if text]
        if not texts:
            return None
        newest = next(
            (i for i in range(len(texts) - 1, -1, -1) if texts[i][0]["role"] == "user"), None
        )
        tail = [text for i, (_, text) in enumerate(texts) if i != newest][-self.tail_messages :]
        parts: list[str] = []
        weights: list[float] = []
        if newest is not None:
            parts.append(texts[newest][1])
            weights.append(self.user_weight if tail else 1.0)
        if tail:
            parts.append("\n".join(tail))
            weights.append(1.0 - self.user_weight if newest is not None else 1.0)
        vectors = self.text_cache.embed([(part, part) for part in parts])
        keywords = frozenset(extract_keywords(parts[0]))
        return _Query(vectors, tuple(weights), keywords, is_chinese(parts))

    @staticmethod
    def _similarity(vectors: Matrix, query: _Query) -> Vector:
        """Cosines with the weighted query, or with its first text alone when that is higher.

        The first text is the newest user message: a question about an old event shares
        nothing with the recent tail, and blending would bury the very messages it asks for.
        """
        weights = np.asarray(query.weights, dtype=np.float32)
        cosines: Matrix = vectors @ query.vectors.T
        best: Vector = np.maximum(cosines @ weights, cosines[:, 0]).astype(np.float32)
        return best

    def _lexical(self, topic_id: str, scored: Sequence[tuple[StoredMessage, str]]) -> BM25:
        """The topic's BM25 index over keywords, rebuilt only when the topic grew."""
        key = (topic_id, len(scored), scored[-1][0]["id"])
        with self._lexical_lock:
            index = self._lexical_indexes.get(topic_id)
            if index is not None and index[0] == key:
                self._lexical_indexes.move_to_end(topic_id)
                return index[1]
        built = BM25([sorted(_keywords(text)) for _, text in scored])
        with self._lexical_lock:
            self._lexical_indexes[topic_id] = (key, built)
            self._lexical_indexes.move_to_end(topic_id)
            while len(self._lexical_indexes) > LEXICAL_INDEXES:
                self._lexical_indexes.popitem(last=False)
        return built

    def _references(
        self, relevant: Sequence[StoredMessage], topic_messages: Sequence[StoredMessage]
    ) -> list[str]:
        """Ids of the relevant messages with their unit partners, most relevant unit first.

        The order lets the assembler drop the least relevant quotes first under its budget.
        """
        unit_of: dict[str, list[StoredMessage]] = {}
        for unit in group_units(topic_messages):
            for message in unit:
                unit_of[message["id"]] = unit
        chosen: dict[str, None] = {}
        for message in relevant:
            unit = unit_of.get(message["id"], [message])
            ids = [m["id"] for m in unit if m["id"] not in chosen]
            if len(chosen) + len(ids) <= self.max_references:
                chosen.update(dict.fromkeys(ids))
            elif not chosen:
                # The best unit alone is too long (a tool exchange, a long thread of replies):
                # keep the question that opens it and the message that matched.
                chosen.update(dict.fromkeys([unit[0]["id"], message["id"]]))
        return list(chosen)

    def _summary(
        self,
        topic: TopicInfo,
        relevant: Sequence[StoredMessage],
        query: _Query,
        topic_messages: Sequence[StoredMessage],
    ) -> str:
        """Write a lead naming the topic and the sentences most related to the query, in order.

        ``relevant`` is best first; the summary lists its sentences in chronological order.
        """
        name = topic["name"] or topic["id"]
        if query.chinese:
            lead = f"话题「{name}」中与当前对话相关的要点："
        else:
            lead = f"Relevant points from the earlier topic “{name}”:"
        position = {m["id"]: index for index, m in enumerate(relevant)}
        chronology = {m["id"]: index for index, m in enumerate(topic_messages)}
        candidates: list[tuple[float, int, int, str]] = []
        for message in relevant:
            rank = position[message["id"]]
            for offset, sentence in enumerate(split_sentences(message_text(message))):
                found = _keywords(sentence)
                if not found:
                    continue
                # Sentences sharing the query's keywords first, then by their message's rank.
                weight = keyword_overlap(query.keywords, found) - 0.01 * rank
                line = f"- {message['role']}: {clip(sentence, _SENTENCE_CHARS)}"
                candidates.append((weight, rank, offset, line))
        candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
        kept: list[tuple[int, int, str]] = []
        seen: set[str] = set()
        used = len(lead)
        for _, rank, offset, line in candidates:
            if line in seen or used + len(line) + 1 > self.summary_chars:
                continue
            seen.add(line)
            kept.append((chronology[relevant[rank]["id"]], offset, line))
            used += len(line) + 1
        kept.sort()
        return "\n".join([lead, *(line for _, _, line in kept)])


@functools.lru_cache(maxsize=65_536)
def _keywords(text: str) -> frozenset[str]:
    return frozenset(extract_keywords(text))


def _fused_order(semantic: Vector, lexical: npt.NDArray[np.float64]) -> list[int]:
    """Indices by reciprocal-rank fusion (k = 60) of the embedding and BM25 rankings.

    On LoCoMo the fusion of the two beats either alone (see ``benchmarks/README.md``); a message
    sharing no keyword with the question gets no lexical share.
    """
    fused = np.zeros(len(semantic), dtype=np.float64)
    for rank, index in enumerate(np.argsort(-semantic, kind="stable")):
        fused[index] += 1.0 / (_RRF_K + rank + 1)
    for rank, index in enumerate(np.argsort(-lexical, kind="stable")):
        if lexical[index] > 0:
            fused[index] += 1.0 / (_RRF_K + rank + 1)
    return [int(i) for i in np.argsort(-fused, kind="stable")]


def _silent(score: float) -> TopicVerdict:
    return {"relevance_score": score, "referenced_message_ids": [], "summary": ""}
