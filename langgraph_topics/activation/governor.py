"""The per-turn governor of the topic windows (DESIGN: "Topic windows are governed").

Before the fan-out the native evidence score of every message of the thread is known
(``retrieval/turn_evidence.py``). For a topic window served by a model, each active topic then
gets one of three decisions:

- **skip** the model when its best evidence cannot enter the window: its best message ranks
  past what the budget could take (``reach``: ``REACH_FACTOR`` times the messages of an
  average size the budget holds beside the recent ones, at least ``MIN_REACH``), or its
  relevance is under ``RELEVANCE_FLOOR``, or the native reading of the same evidence scores it
  under the reference threshold; or when the turn already has ``Settings.topic_window_reads``
  model reads, or its cheap-model input would pass ``Settings.topic_window_input_tokens`` (the
  topics with the best evidence are read first);
- **reuse** its previous result when neither the topic (its messages, name and brief) nor the
  question's evidence for it (its best messages, the band of its best relevance and of its
  best rank) changed: the tool rounds of one turn, a follow-up on the same messages. At most
  ``MAX_REUSES`` times in a row, so that a model's judgement is renewed now and then;
- **read** otherwise.

Topics activated in a later pass of the turn (``activate_topic``, a recall cue, the index
search) were asked for: they are never skipped for their evidence nor served an earlier
result, within the turn's reads and cap.

A skipped topic is read by the native back end instead (``nodes/topic_window.py``; with
``Settings.topic_window_native_quotes`` off, it gets the native score of the same evidence
alone, ``TopicEvidence.native_score``, worked out here anyway), so grey activation (seed 000
§4.7, §16.2) keeps working for every active topic, as in a memory without models. A topic the
evidence does not reach at all gets no score (neither an invented 0 nor an estimate); its
round counts as a round at risk of dormancy instead (``grey.decide_dormancy``).

The native topic window is not governed: it costs milliseconds, and the messages it reads are
the recall the benchmarks measure.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from langgraph_topics.retrieval.evidence import Evidence
from langgraph_topics.roles.protocols import EvidenceTopicWindow
from langgraph_topics.runtime_protocols import uses_evidence
from langgraph_topics.settings import Settings
from langgraph_topics.state.records import (
    EstimateRecord,
    StoredMessage,
    TopicResult,
    WindowDecision,
)
from langgraph_topics.tokens import TokenCounter

REACH_FACTOR = 2.0
"""How many times the messages the budget holds a topic's best message may rank at: a model
values its quotes by its own score, not by the native evidence, so the native ranking only
says which topics cannot matter, with room to spare."""
MIN_REACH = 40
"""The least reach, in messages: a small budget still lets the thread's best topics be read."""
RELEVANCE_FLOOR = 0.1
"""Under this relevance a topic's best message is far under the thread's mean (about 0.7
deviations): nothing of the topic answers the question."""
PROMPT_TOKENS = 900
"""The topic-window prompt's own tokens (instructions, card format, markup), about."""
MAX_REUSES = 3
"""Turns in a row a result may be reused before the model reads the topic again."""
LEADERS = 3
"""The topic's best messages whose ids stand for the question's evidence for it."""
RELEVANCE_BAND = 0.05
"""Width of the bands of a topic's best relevance in its fingerprint; its best rank is banded
by powers of two. A question that moves either out of its band has the topic read again."""
UNREACHED_REASONS = ("out_of_reach", "under_floor", "native_low")
"""Skips that say the topic's evidence cannot matter this turn (a round at risk of dormancy);
``input_cap`` and ``max_active`` say nothing of the topic."""

MEMO_ENTRIES = 1024
"""Results kept per topic-window back end (one per topic of the threads in use)."""


def governs(window: object, settings: Settings) -> bool:
    """Whether the governor decides this topic window's calls.

    Back ends that call a model say so with a ``governed`` class attribute
    (``LlmTopicWindow``); the native one, and any back end that does not, is read as before.
    """
    return settings.topic_window_governor and bool(getattr(type(window), "governed", False))


def native_window(window: object) -> EvidenceTopicWindow | None:
    """The native back end a model topic window falls back on, when it reads the evidence."""
    fallback = getattr(window, "fallback", None)
    return fallback if uses_evidence(fallback) else None


@dataclass(frozen=True)
class TopicEvidence:
    """What the turn's evidence says of one topic."""

    best_rank: int
    """Thread-wide rank of its best message (0 = the thread's best)."""
    best_relevance: float
    leaders: tuple[str, ...]
    """Its best messages' ids, best first."""
    native_score: float | None = None
    """The native topic window's score of it from the same evidence (None: not worked out)."""


def topic_evidence(
    evidence: Evidence,
    message_ids: Sequence[str],
    native_score: Callable[[Sequence[str]], float | None] | None = None,
) -> TopicEvidence | None:
    """The evidence of a topic's messages (None when none of them was scored).

    ``native_score``: the native topic window's score from the topic's scored message ids.
    """
    ranked = evidence.ranked(message_ids)
    if not ranked:
        return None
    best = ranked[0]
    return TopicEvidence(
        best_rank=evidence.rank_of(best),
        best_relevance=evidence.relevance_of(best),
        leaders=tuple(ranked[:LEADERS]),
        native_score=native_score(ranked) if native_score is not None else None,
    )


def reach(
    settings: Settings,
    working: Sequence[StoredMessage],
    estimate: EstimateRecord | None,
    counter: TokenCounter,
) -> int:
    """How far down the thread's ranking a topic's best message may sit and still be read.

    The room is the budget less the system prompt and the recent messages (always in the
    window); messages are taken at the working set's average size.
    """
    recent = working[-settings.keep_recent :]
    recent_tokens = sum(counter(m["content"]) for m in recent)
    system = estimate["system"] if estimate else 0
    room = max(0, settings.budget_tokens - system - recent_tokens)
    per_message = max(1.0, recent_tokens / len(recent)) if recent else 32.0
    return max(MIN_REACH, math.ceil(REACH_FACTOR * room / per_message))


def fingerprint(
    topic_id: str,
    messages: Sequence[StoredMessage],
    name: str,
    brief: str,
    found: TopicEvidence | None,
) -> str:
    """A topic and the question's evidence for it, hashed (what a reused result stands on)."""
    last = messages[-1]["id"] if messages else ""
    leaders = found.leaders if found else ()
    # Bands, not values: a tool round's new messages move every standardised score a little.
    band = math.floor(found.best_relevance / RELEVANCE_BAND) if found else -1
    rank_band = found.best_rank.bit_length() if found else -1
    text = "\x1f".join(
        [topic_id, str(len(messages)), last, name, brief, *leaders, str(band), str(rank_band)]
    )
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


@dataclass
class _Kept:
    fingerprint: str
    result: TopicResult
    reuses: int


class WindowMemo:
    """The last result of each topic read by one topic-window back end, by its fingerprint.

    Kept in the process (a checkpoint stays small): another process, or a restart, reads the
    topic again, which is what the memo saves and never more.
    """

    def __init__(self, entries: int = MEMO_ENTRIES) -> None:
        self.entries = entries
        self._kept: OrderedDict[tuple[str, str, str], _Kept] = OrderedDict()
        self._lock = threading.Lock()

    def reusable(self, scope: tuple[str, str], topic_id: str, fingerprint: str) -> bool:
        """Whether a result of this fingerprint is kept and may be reused once more."""
        with self._lock:
            kept = self._kept.get((*scope, topic_id))
            return kept is not None and kept.fingerprint == fingerprint and kept.reuses < MAX_REUSES

    def take(self, scope: tuple[str, str], topic_id: str, fingerprint: str) -> TopicResult | None:
        """The kept result of this fingerprint, counted as one more reuse (None: read)."""
        with self._lock:
            key = (*scope, topic_id)
            kept = self._kept.get(key)
            if kept is None or kept.fingerprint != fingerprint or kept.reuses >= MAX_REUSES:
                return None
            kept.reuses += 1
            self._kept.move_to_end(key)
            return kept.result

    def keep(
        self, scope: tuple[str, str], topic_id: str, fingerprint: str, result: TopicResult
    ) -> None:
        """Keep a result the model has just given."""
        with self._lock:
            key = (*scope, topic_id)
            self._kept[key] = _Kept(fingerprint, result, 0)
            self._kept.move_to_end(key)
            while len(self._kept) > self.entries:
                self._kept.popitem(last=False)


MEMO_BACK_ENDS = 64
"""Topic-window back ends whose memos are kept (one per memory of the process)."""
_MEMOS: OrderedDict[int, tuple[object, WindowMemo]] = OrderedDict()
_MEMOS_LOCK = threading.Lock()


def memo_of(window: object) -> WindowMemo:
    """The memo of one topic-window back end (a memory's own: never another's results).

    Kept by identity, holding the back end so that its ``id()`` is not reused (a back end
    need not be hashable, nor weakly referable).
    """
    with _MEMOS_LOCK:
        found = _MEMOS.get(id(window))
        if found is not None and found[0] is window:
            _MEMOS.move_to_end(id(window))
            return found[1]
        memo = WindowMemo()
        _MEMOS[id(window)] = (window, memo)
        while len(_MEMOS) > MEMO_BACK_ENDS:
            _MEMOS.popitem(last=False)
        return memo


@dataclass(frozen=True)
class TopicCandidate:
    """One pending topic as the governor weighs it."""

    topic_id: str
    fingerprint: str
    evidence: TopicEvidence | None
    input_tokens: int
    """The estimated input of its call: prompt, topic messages and working set."""


def plan_windows(
    candidates: Sequence[TopicCandidate],
    *,
    settings: Settings,
    reach_rank: int,
    requested: bool,
    reusable: Callable[[TopicCandidate], bool],
    spent: int = 0,
    reads: int = 0,
) -> dict[str, WindowDecision]:
    """The decision for each pending topic of one fan-out.

    Args:
        candidates: The pending topics, in registry order.
        settings: The cap (``topic_window_input_tokens``).
        reach_rank: The rank a topic's best message must be under (:func:`reach`).
        requested: Whether these topics were asked for this turn (a later pass): never
            skipped for their evidence.
        reusable: Whether a candidate's previous result may be reused.
        spent: Input tokens the turn's earlier passes sent.
        reads: Topics the turn's earlier passes had a model read (``topic_window_reads``).
    """
    decisions: dict[str, WindowDecision] = {}
    wanted: list[TopicCandidate] = []
    for candidate in candidates:
        found = candidate.evidence
        if not requested and reusable(candidate):
            # Its estimate goes with it for a read the memo can no longer serve; a reuse
            # itself sends nothing (``spent_this_turn`` counts 0 for it).
            decisions[candidate.topic_id] = {
                "decision": "reuse",
                "fingerprint": candidate.fingerprint,
                "input_tokens": candidate.input_tokens,
            }
        elif requested:
            wanted.append(candidate)
        elif found is None:
            decisions[candidate.topic_id] = _skip(
                "out_of_reach", "no message of the topic has evidence this turn", found
            )
        elif found.best_rank >= reach_rank:
            decisions[candidate.topic_id] = _skip(
                "out_of_reach",
                f"best evidence ranks {found.best_rank + 1}, past the {reach_rank} messages "
                "the window could take",
                found,
            )
        elif found.best_relevance < RELEVANCE_FLOOR:
            decisions[candidate.topic_id] = _skip(
                "under_floor",
                f"best evidence relevance {found.best_relevance:.2f} under the floor "
                f"{RELEVANCE_FLOOR:.2f}",
                found,
            )
        elif found.native_score is not None and found.native_score < settings.reference_threshold:
            decisions[candidate.topic_id] = _skip(
                "native_low",
                f"the native reading scores it {found.native_score:.2f}, under the reference "
                f"threshold {settings.reference_threshold:.2f}",
                found,
            )
        else:
            wanted.append(candidate)
    cap = settings.topic_window_input_tokens
    # The best evidence first: when the cap cuts, it cuts the topics least likely to matter.
    wanted.sort(key=lambda c: c.evidence.best_rank if c.evidence else math.inf)
    most = settings.topic_window_reads
    for candidate in wanted:
        if most is not None and reads >= most:
            decisions[candidate.topic_id] = _skip(
                "reads_cap",
                f"the turn's {most} model reads are taken by topics with better evidence",
                candidate.evidence,
            )
            continue
        if cap is not None and spent + candidate.input_tokens > cap:
            decisions[candidate.topic_id] = _skip(
                "input_cap",
                f"{candidate.input_tokens:,} input tokens would pass the turn's cap of "
                f"{cap:,} ({spent:,} sent)",
                candidate.evidence,
            )
            continue
        spent += candidate.input_tokens
        reads += 1
        decisions[candidate.topic_id] = {
            "decision": "read",
            "fingerprint": candidate.fingerprint,
            "input_tokens": candidate.input_tokens,
        }
    return {c.topic_id: decisions[c.topic_id] for c in candidates}


def _skip(reason: str, detail: str, found: TopicEvidence | None) -> WindowDecision:
    skip: WindowDecision = {"decision": "skip", "reason": reason, "detail": detail}
    if found is not None and found.native_score is not None:
        skip["native_score"] = found.native_score
    return skip


def spent_this_turn(results: Mapping[str, TopicResult]) -> int:
    """Input tokens the turn's governed reads have sent so far (earlier passes)."""
    return sum(r.get("input_tokens", 0) for r in results.values())


def reads_this_turn(results: Mapping[str, TopicResult]) -> int:
    """Topics a model read in the turn's earlier passes."""
    return sum(1 for r in results.values() if r.get("window") == "read")
