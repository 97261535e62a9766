"""Native splitter: assigns units to topics by embedding and keyword continuity (seed 000 §4.4).

Units are read in order, and two signals decide each one's place.

- Seed 003's keyword continuity with the run's last unit (:mod:`langgraph_topics.keywords.
  continuity`: overlap over the larger keyword set, time decay, the weak-association bonus and
  its cap). In its ``continuous`` band the unit stays in the run; in its ``drift`` band it stays
  unless another topic claims it; in its ``switch`` band the embeddings decide alone.
- The embeddings: a unit close to the current run (``continuity``) stays with it. Otherwise it
  goes to the most similar topic (existing, by its name and brief, or created earlier in this
  plan, by the mean of its three units closest to this one) when that is similar enough
  (``match``); failing that it still stays in the run when loosely related
  (``drift``), and only opens a new topic under that. The run is compared with both its
  centroid and its last unit, so a gradual drift (war → its effect on stocks → stock
  fundamentals) stays one topic instead of being cut at every step.

Small talk (greetings, thanks, goodbyes, talk about the conversation itself: see
:mod:`langgraph_topics.keywords.small_talk`) never opens a topic: a unit whose user messages are
small talk stays with the run it follows (or, at the start of a split, joins the run after it),
and a small-talk message inside a unit does not count towards the unit's vector or keywords.

All thresholds are on the calibrated grey scale of
:mod:`~langgraph_topics.roles.native.calibration`. With multilingual USE, follow-up units score
a raw cosine of about 0.29–0.68 against the unit before them and topic switches 0.0–0.2, which
the default ``drift`` of 0.2 (raw ≈ 0.28) separates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from langgraph_topics.keywords import extract_keywords, keyword_overlap
from langgraph_topics.keywords.continuity import (
    Band,
    ContinuityRules,
    round_keywords,
    round_similarity,
    time_decay,
)
from langgraph_topics.keywords.small_talk import is_small_talk
from langgraph_topics.roles.native.brief_writer import NativeBriefWriter
from langgraph_topics.roles.native.calibration import calibrate
from langgraph_topics.roles.native.text import message_text
from langgraph_topics.roles.native.timestamps import seconds_between
from langgraph_topics.roles.native.vectors import (
    Matrix,
    Vector,
    VectorCache,
    centroid,
    cosine,
    embed_matrix,
)
from langgraph_topics.roles.native.vectors import unit as unit_length
from langgraph_topics.roles.protocols import NewTopic, SplitAssignment, SplitPlan, TopicInfo
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.protocols import Embedder

_CLOSEST_MEMBERS = 3
"""A plan's topic matches a unit as its closest members do: a sum of many units matches anything."""

_SMALL_TALK_CHARS = 20
"""A unit this short with at most one keyword is small talk, never the start of a topic."""


class _Members:
    """Unit vectors of a plan's topic, compared with a unit as its closest few."""

    def __init__(self) -> None:
        self._rows: Matrix | None = None
        self._count = 0

    def add(self, vector: Vector) -> None:
        if self._rows is None:
            self._rows = np.empty((4, vector.shape[0]), dtype=np.float32)
        elif self._count == len(self._rows):
            self._rows = np.concatenate([self._rows, np.empty_like(self._rows)])
        self._rows[self._count] = unit_length(vector)
        self._count += 1

    def closest(self, direction: Vector) -> float:
        """Mean cosine of the members closest to ``direction`` (unit length), 0 with none."""
        if self._rows is None:
            return 0.0
        cosines = self._rows[: self._count] @ direction
        if self._count > _CLOSEST_MEMBERS:
            cosines = np.partition(cosines, -_CLOSEST_MEMBERS)[-_CLOSEST_MEMBERS:]
        return float(np.mean(cosines))


@dataclass
class _Target:
    """A topic units can go to: an existing one or one this plan creates."""

    topic_id: str | None
    new_key: str | None
    anchor: Vector | None
    """Embedding of an existing topic's name and brief."""
    keywords: set[str]
    members: _Members = field(default_factory=_Members)
    """The units this plan gave the topic."""
    messages: list[StoredMessage] = field(default_factory=list)

    def absorb(self, vector: Vector, keywords: set[str], unit: Sequence[StoredMessage]) -> None:
        self.members.add(vector)
        self.keywords |= keywords
        self.messages.extend(unit)

    def similarity(self, direction: Vector) -> float:
        """Cosine with ``direction``, of unit length: scaled once for all targets, not by each."""
        anchor = cosine(direction, self.anchor) if self.anchor is not None else 0.0
        return max(anchor, self.members.closest(direction))


@dataclass
class _Run:
    """Consecutive units that went to one target: one assignment of the plan."""

    target: _Target
    vector_sum: Vector
    last: Vector
    keywords: set[str]
    message_ids: list[str]
    last_round: list[str] = field(default_factory=list)
    """Seed 003 keywords of the last unit with any (the round the next one is compared with)."""
    last_time: str | None = None
    """Timestamp of the run's last message, when known."""
    has_content: bool = False
    """Whether a unit other than small talk is in the run (its vectors start with that unit)."""

    def extend(self, unit: _Unit) -> None:
        self.message_ids.extend(m["id"] for m in unit.messages)
        self.last_time = unit.messages[-1].get("timestamp") or self.last_time
        if unit.small_talk:
            # Kept with the subject it closes, without changing what the subject looks like.
            self.target.messages.extend(unit.messages)
            return
        # The vectors start with the first unit that says something.
        self.vector_sum = self.vector_sum + unit.vector if self.has_content else unit.vector.copy()
        self.has_content = True
        self.last = unit.vector
        self.keywords |= unit.keywords
        if unit.round:
            self.last_round = unit.round
        self.target.absorb(unit.vector, unit.keywords, unit.messages)


@dataclass
class _Unit:
    """One unit as the splitter reads it."""

    messages: list[StoredMessage]
    text: str
    """The text of its messages that are not small talk (all of them when every one is)."""
    vector: Vector
    keywords: set[str]
    round: list[str]
    """Seed 003 keywords (the longest content words)."""
    small_talk: bool
    """Its user messages (all its messages, when it has none) are small talk."""


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
        rules: Seed 003's keyword continuity numbers (its defaults when omitted).
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
        rules: ContinuityRules | None = None,
    ) -> None:
        self.embedder = embedder
        self.rules = rules or ContinuityRules()
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
        self.topic_cache = VectorCache(embedder)

    def split(
        self, units: Sequence[Sequence[StoredMessage]], topics: Sequence[TopicInfo]
    ) -> SplitPlan:
        """Assign every message of ``units`` once; a unit's messages always go to one topic.

        Archived topics are not offered: they left normal activation (seed 000 §4.8), and a new
        message reviving their subject opens a fresh topic instead.
        """
        return self._split(units, topics, None)

    def split_with_briefs(
        self,
        units: Sequence[Sequence[StoredMessage]],
        topics: Sequence[TopicInfo],
        *,
        stored_brief: Callable[[str, str], Vector | None],
    ) -> SplitPlan:
        """Like :meth:`split`, taking a brief's vector from the topic index where it holds it."""
        return self._split(units, topics, stored_brief)

    def _split(
        self,
        units: Sequence[Sequence[StoredMessage]],
        topics: Sequence[TopicInfo],
        stored_brief: Callable[[str, str], Vector | None] | None,
    ) -> SplitPlan:
        kept = _distinct_units(units)
        if not kept:
            return {"assignments": [], "new_topics": []}
        open_topics = [t for t in topics if t["status"] != "archived"]
        topic_texts = [f"{t['name']}\n{t['brief']}" for t in open_topics]
        latest = next(
            ((i, t["latest_unit"]) for i, t in enumerate(open_topics) if t.get("latest_unit")),
            None,
        )
        read = self._read_units([*kept, latest[1]] if latest else kept)
        topic_of = {text: t["id"] for t, text in zip(open_topics, topic_texts, strict=True)}

        def stored(text: str) -> Vector | None:
            return None if stored_brief is None else stored_brief(topic_of[text], text)

        anchors = self.topic_cache.embed([(text, text) for text in topic_texts], stored=stored)
        targets = [
            _Target(topic["id"], None, anchors[index], set(extract_keywords(text)))
            for index, (topic, text) in enumerate(zip(open_topics, topic_texts, strict=True))
        ]
        runs: list[_Run] = []
        if latest:
            # The conversation goes on from the previous split's last unit: its topic is the
            # current run, which the first units here may continue (or drift from).
            runs.append(_carried_run(targets[latest[0]], read.pop()))
        new_targets: list[_Target] = []
        waiting: list[_Unit] = []  # small talk met before any run: it joins the first one
        for unit in read:
            current = runs[-1] if runs else None
            if current is not None and self._resumes_later(current, unit):
                # A later sitting (LoCoMo's sessions are days apart): nothing carries over by
                # proximity, only by content, through the topics below.
                current = None
            if unit.small_talk:
                if current is not None:
                    current.extend(unit)
                else:
                    waiting.append(unit)
                continue
            if current is not None and self._continues(current, unit):
                current.extend(unit)
                continue
            target = self._best_target(targets, unit.vector, unit.keywords)
            if current is not None and (
                target is current.target or (target is None and self._drifts(current, unit))
            ):
                # Drift: related enough to the run, and no topic claims it more clearly.
                current.extend(unit)
                continue
            if target is None:
                target = _Target(None, f"new-{len(new_targets) + 1}", None, set())
                targets.append(target)
                new_targets.append(target)
            runs.append(_Run(target, unit.vector.copy(), unit.vector, set(), []))
            for small_talk in waiting:
                runs[-1].extend(small_talk)
            waiting = []
            runs[-1].extend(unit)
        if waiting:
            # Nothing but small talk in this split: it goes to the topic it resembles most, a
            # new topic only when there is none at all (a message is never left out).
            self._place_small_talk(waiting, targets, runs, new_targets)
        return {
            "assignments": _assignments(runs),
            "new_topics": [self._new_topic(target) for target in new_targets],
        }

    def _read_units(self, units: Sequence[Sequence[StoredMessage]]) -> list[_Unit]:
        """Read every unit: text, vector, keywords, small-talk verdict (one embedding call)."""
        talk = [[is_small_talk(message_text(m)) for m in unit] for unit in units]
        matrix = self._unit_vectors(units, talk)
        read: list[_Unit] = []
        for unit, chatter, vector in zip(units, talk, matrix, strict=True):
            said = [m for m, idle in zip(unit, chatter, strict=True) if not idle] or list(unit)
            text = "\n".join(message_text(m) for m in said)
            users = [idle for m, idle in zip(unit, chatter, strict=True) if m["role"] == "user"]
            read.append(
                _Unit(
                    messages=list(unit),
                    text=text,
                    vector=vector,
                    keywords=set(extract_keywords(text)),
                    round=round_keywords(text, self.rules.keyword_limit),
                    small_talk=all(users) if users else all(chatter),
                )
            )
        return read

    def _continues(self, run: _Run, unit: _Unit) -> bool:
        """Whether the unit stays in the run without asking any other topic."""
        if self._band(run, unit) == "continuous":
            return True
        return self._closeness(run, unit.vector, unit.keywords, unit.text) >= self.continuity

    def _drifts(self, run: _Run, unit: _Unit) -> bool:
        """Whether a unit no topic claims is still related enough to stay in the run."""
        if self._band(run, unit) == "drift":
            return True
        return self._closeness(run, unit.vector, unit.keywords, unit.text) >= self.drift

    def _resumes_later(self, run: _Run, unit: _Unit) -> bool:
        """Whether so much time passed that even identical keywords would switch (seed 003).

        ``similarity × time_decay`` under ``continuity_threshold`` with a similarity of 1:
        about 20 hours with the seed's numbers.
        """
        seconds = seconds_between(run.last_time, unit.messages[0].get("timestamp"))
        return time_decay(seconds, self.rules.time_decay_factor) < self.rules.continuity_threshold

    def _band(self, run: _Run, unit: _Unit) -> Band:
        seconds = seconds_between(run.last_time, unit.messages[0].get("timestamp"))
        return self.rules.band(round_similarity(run.last_round, unit.round, seconds, self.rules))

    def _place_small_talk(
        self,
        waiting: Sequence[_Unit],
        targets: list[_Target],
        runs: list[_Run],
        new_targets: list[_Target],
    ) -> None:
        vector = centroid(np.stack([unit.vector for unit in waiting]))  # unit length
        chosen = max(targets, key=lambda t: t.similarity(vector), default=None)
        if chosen is None:
            chosen = _Target(None, f"new-{len(new_targets) + 1}", None, set())
            targets.append(chosen)
            new_targets.append(chosen)
        run = _Run(chosen, vector.copy(), vector, set(), [])
        for unit in waiting:
            run.extend(unit)
        runs.append(run)

    def _unit_vectors(
        self, units: Sequence[Sequence[StoredMessage]], talk: Sequence[Sequence[bool]]
    ) -> Matrix:
        """Each unit's vector: the normalised mean of its messages' vectors.

        Small-talk messages are left out of the mean when the unit says anything else: a canned
        "could you tell me more?" made every unit it followed alike, in any language.

        Messages are embedded one by one (a caching embedder then serves each text once, and
        a chat turn's unsplit messages were usually embedded already). Without the speaker's
        name, unlike the retrieval index: a name in every message made all units alike, and
        conv-26 at 4,000 tokens fell from five topics to three.
        """
        texts = [message_text(m) or " " for unit in units for m in unit]
        vectors = embed_matrix(self.embedder, texts)
        rows: list[Vector] = []
        start = 0
        for unit, chatter in zip(units, talk, strict=True):
            block = vectors[start : start + len(unit)]
            said = [index for index, idle in enumerate(chatter) if not idle]
            rows.append(centroid(block[said] if said else block))
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
        direction = unit_length(vector)
        for target in targets:
            raw = target.similarity(direction) + self.keyword_weight * keyword_overlap(
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


def _carried_run(target: _Target, unit: _Unit) -> _Run:
    """A run already holding ``unit`` (stored before this split), with no message to assign."""
    return _Run(
        target,
        unit.vector.copy(),
        unit.vector,
        set(unit.keywords),
        [],
        last_round=unit.round,
        last_time=unit.messages[-1].get("timestamp"),
        has_content=not unit.small_talk,
    )


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
        if run.message_ids
    ]
