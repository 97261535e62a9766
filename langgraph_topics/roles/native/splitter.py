"""Native splitter: assigns units to topics by embedding and keyword continuity (seed 000 §4.4).

Units are read in order, and seed 003's three bands decide each one's place. A unit close to
the current run of the conversation (``continuity``) stays with it. Otherwise it goes to the
most similar topic (existing, or created earlier in this plan) when that is similar enough
(``match``); failing that it still stays in the run when loosely related (``drift``), and only
opens a new topic under that. The run is compared with both its centroid and its last unit, so
a gradual drift (war → its effect on stocks → stock fundamentals) stays one topic instead of
being cut at every step.

All thresholds are on the calibrated grey scale of
:mod:`~langgraph_topics.roles.native.calibration`. With multilingual USE, follow-up units score
a raw cosine of about 0.29–0.68 against the unit before them and topic switches 0.0–0.2, which
the default ``drift`` of 0.2 (raw ≈ 0.28) separates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from langgraph_topics.keywords import extract_keywords, keyword_overlap
from langgraph_topics.roles.native.brief_writer import NativeBriefWriter
from langgraph_topics.roles.native.calibration import calibrate
from langgraph_topics.roles.native.text import message_text
from langgraph_topics.roles.native.vectors import (
    Matrix,
    Vector,
    VectorCache,
    centroid,
    cosine,
    embed_matrix,
)
from langgraph_topics.roles.protocols import NewTopic, SplitAssignment, SplitPlan, TopicInfo
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.protocols import Embedder

_SMALL_TALK_CHARS = 20
"""A unit this short with at most one keyword is small talk, never the start of a topic."""


@dataclass
class _Target:
    """A topic units can go to: an existing one or one this plan creates."""

    topic_id: str | None
    new_key: str | None
    anchor: Vector | None
    """Embedding of an existing topic's name and brief."""
    keywords: set[str]
    vector_sum: Vector | None = None
    """Sum of the vectors of the units this plan gave the topic."""
    messages: list[StoredMessage] = field(default_factory=list)

    def absorb(self, vector: Vector, keywords: set[str], unit: Sequence[StoredMessage]) -> None:
        self.vector_sum = vector.copy() if self.vector_sum is None else self.vector_sum + vector
        self.keywords |= keywords
        self.messages.extend(unit)

    def similarity(self, vector: Vector) -> float:
        anchor = cosine(vector, self.anchor) if self.anchor is not None else 0.0
        gathered = cosine(vector, self.vector_sum) if self.vector_sum is not None else 0.0
        return max(anchor, gathered)


@dataclass
class _Run:
    """Consecutive units that went to one target: one assignment of the plan."""

    target: _Target
    vector_sum: Vector
    last: Vector
    keywords: set[str]
    message_ids: list[str]

    def extend(self, unit: Sequence[StoredMessage], vector: Vector, keywords: set[str]) -> None:
        if self.message_ids:
            self.vector_sum = self.vector_sum + vector
        self.last = vector
        self.keywords |= keywords
        self.message_ids.extend(m["id"] for m in unit)
        self.target.absorb(vector, keywords, unit)


class NativeSplitter:
    """Assigns units to topics without a language model.

    Args:
        embedder: Embeds the units and the existing topics (one call per split).
        continuity: A unit stays in the current run when its similarity to the run (cosine plus
            the keyword bonus, on the calibrated grey scale) reaches this.
        match: A unit under ``continuity`` joins the most similar topic when its calibrated
            similarity to it reaches this.
        drift: A unit under ``continuity`` that no topic matches still stays in the run when
            its similarity reaches this (seed 003's drift band): follow-ups such as "Can I use
            a pressure cooker instead?" share little with the question before them. Under it,
            the unit opens a new topic.
        keyword_weight: Weight of the keyword overlap added to the cosine similarity.
        brief_bytes: Size limit of a new topic's brief.
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        continuity: float = 0.45,
        match: float = 0.5,
        drift: float = 0.2,
        keyword_weight: float = 0.2,
        brief_bytes: int = 1024,
    ) -> None:
        self.embedder = embedder
        self.continuity = continuity
        self.match = match
        self.drift = drift
        self.keyword_weight = keyword_weight
        # Keyword density only: embedding every sentence of every new topic would multiply the
        # model calls of a split that may cover hundreds of messages.
        self.brief_writer = NativeBriefWriter(None, brief_bytes=brief_bytes)
        # Every split compares units with every open topic's name and brief, and most briefs did
        # not change since the last split: caching them by text keeps a split's cost with the
        # units it splits instead of the number of topics (a brief is about 1 KB to encode).
        self.topic_cache = VectorCache(embedder, max_entries=4096)

    def split(
        self, units: Sequence[Sequence[StoredMessage]], topics: Sequence[TopicInfo]
    ) -> SplitPlan:
        """Assign every message of ``units`` once; a unit's messages always go to one topic.

        Archived topics are not offered: they left normal activation (seed 000 §4.8), and a new
        message reviving their subject opens a fresh topic instead.
        """
        kept = _distinct_units(units)
        if not kept:
            return {"assignments": [], "new_topics": []}
        open_topics = [t for t in topics if t["status"] != "archived"]
        unit_texts = ["\n".join(message_text(m) for m in unit) for unit in kept]
        topic_texts = [f"{t['name']}\n{t['brief']}" for t in open_topics]
        matrix = self._unit_vectors(kept)
        anchors = self.topic_cache.embed([(text, text) for text in topic_texts])
        targets = [
            _Target(topic["id"], None, anchors[index], set(extract_keywords(text)))
            for index, (topic, text) in enumerate(zip(open_topics, topic_texts, strict=True))
        ]
        runs: list[_Run] = []
        new_targets: list[_Target] = []
        for unit, text, vector in zip(kept, unit_texts, matrix, strict=False):
            keywords = set(extract_keywords(text))
            current = runs[-1] if runs else None
            closeness = 0.0
            if current is not None:
                closeness = self._closeness(current, vector, keywords, text)
            if current is not None and closeness >= self.continuity:
                current.extend(unit, vector, keywords)
                continue
            target = self._best_target(targets, vector, keywords)
            if current is not None and (
                target is current.target or (target is None and closeness >= self.drift)
            ):
                # Drift: related enough to the run, and no topic claims it more clearly.
                current.extend(unit, vector, keywords)
                continue
            if target is None:
                target = _Target(None, f"new-{len(new_targets) + 1}", None, set())
                targets.append(target)
                new_targets.append(target)
            runs.append(_Run(target, vector.copy(), vector, set(), []))
            runs[-1].extend(unit, vector, keywords)
        return {
            "assignments": _assignments(runs),
            "new_topics": [self._new_topic(target) for target in new_targets],
        }

    def _unit_vectors(self, units: Sequence[Sequence[StoredMessage]]) -> Matrix:
        """Each unit's vector: the normalised mean of its messages' vectors.

        Messages are embedded one by one (a caching embedder then serves each text once, and
        a chat turn's unsplit messages were usually embedded already). Without the speaker's
        name, unlike the retrieval index: a name in every message made all units alike, and
        conv-26 at 4,000 tokens fell from five topics to three.
        """
        texts = [message_text(m) or " " for unit in units for m in unit]
        vectors = embed_matrix(self.embedder, texts)
        rows: list[Vector] = []
        start = 0
        for unit in units:
            rows.append(centroid(vectors[start : start + len(unit)]))
            start += len(unit)
        return np.stack(rows)

    def _closeness(self, run: _Run, vector: Vector, keywords: set[str], text: str) -> float:
        """Calibrated similarity of a unit to the run (its centroid or its last unit)."""
        if not keywords or (len(keywords) <= 1 and len(text) <= _SMALL_TALK_CHARS):
            # "好的，谢谢 / 不客气" says nothing of its own: it belongs with what came before it.
            return 1.0
        similarity = max(cosine(vector, run.vector_sum), cosine(vector, run.last))
        return calibrate(similarity + self.keyword_weight * keyword_overlap(keywords, run.keywords))

    def _best_target(
        self, targets: Sequence[_Target], vector: Vector, keywords: set[str]
    ) -> _Target | None:
        best: _Target | None = None
        best_score = self.match
        for target in targets:
            raw = target.similarity(vector) + self.keyword_weight * keyword_overlap(
                keywords, target.keywords
            )
            score = calibrate(raw)
            if score >= best_score:
                best, best_score = target, score
        return best

    def _new_topic(self, target: _Target) -> NewTopic:
        return {
            "key": target.new_key or "",
            "name": self.brief_writer.derive_name(target.messages),
            "brief": self.brief_writer.compose_brief(target.messages),
        }


def _distinct_units(units: Sequence[Sequence[StoredMessage]]) -> list[list[StoredMessage]]:
    """Units without repeated message ids (a plan must assign each id exactly once)."""
    seen: set[str] = set()
    kept: list[list[StoredMessage]] = []
    for unit in units:
        fresh = [m for m in unit if m["id"] not in seen]
        seen.update(m["id"] for m in fresh)
        if fresh:
            kept.append(fresh)
    return kept


def _assignments(runs: Sequence[_Run]) -> list[SplitAssignment]:
    return [
        {
            "message_ids": list(run.message_ids),
            "topic_id": run.target.topic_id,
            "new_key": run.target.new_key,
        }
        for run in runs
    ]
