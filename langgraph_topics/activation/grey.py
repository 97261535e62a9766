"""Grey (graded) activation: sliding averages, dynamic thresholds, rank-based activation."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from langgraph_topics.settings import Settings
from langgraph_topics.state.records import TopicRecord


def activation_threshold(active_count: int) -> float:
    """Minimum score to activate a topic: ``0.2 + 0.03 × active`` (seed 000 §16.2)."""
    return round(0.2 + 0.03 * active_count, 6)


def dormancy_threshold(active_count: int) -> float:
    """Sliding average under which an active topic falls dormant: half the activation one."""
    return round(activation_threshold(active_count) * 0.5, 6)


def sliding_average(scores: Sequence[float], window: int) -> float:
    """Mean of the last ``window`` scores, weighted toward the newest (0 when there are none)."""
    recent = list(scores)[-window:]
    if not recent:
        return 0.0
    weights = range(1, len(recent) + 1)
    return sum(w * s for w, s in zip(weights, recent, strict=True)) / sum(weights)


def rank_active(
    active: Sequence[TopicRecord],
    settings: Settings,
    *,
    protected: Collection[str] = (),
    core: Collection[str] = (),
) -> list[TopicRecord]:
    """Active topics best first: woken this turn, core, then by sliding average and recency.

    Recency breaks ties, so topics never scored yet (an import's) rank by their last activity.
    """
    return sorted(
        active,
        key=lambda t: (
            t["id"] in protected,
            t["id"] in core,
            sliding_average(t["scores"], settings.score_window),
            t["last_active_at"],
        ),
        reverse=True,
    )


def over_the_cap(topics: Sequence[TopicRecord], settings: Settings) -> dict[str, str]:
    """The active topics past ``max_active`` after an import or a migration, with the reason.

    An import splits without a question to score against, so its topics have no scores: the
    most recently active stay (the conversation goes on where it stopped), their scores
    breaking ties; the rest fall dormant, and the index wakes them when they are asked for.
    """
    active = [t for t in topics if t["status"] == "active"]
    if len(active) <= settings.max_active:
        return {}
    ranked = sorted(
        active,
        key=lambda t: (t["last_active_at"], sliding_average(t["scores"], settings.score_window)),
        reverse=True,
    )
    return {
        t["id"]: f"rank {rank + 1} by recency past the maximum of {settings.max_active}"
        for rank, t in enumerate(ranked)
        if rank >= settings.max_active
    }


@dataclass(frozen=True)
class ActivityDecision:
    """Which active topics stay active and which fall dormant, with the reason."""

    keep: list[str]
    dormant: dict[str, str]
    low_rounds: dict[str, int] = field(default_factory=dict)
    """Each kept topic's consecutive at-risk rounds after this one (0: not at risk)."""


def decide_dormancy(
    topics: Sequence[TopicRecord],
    settings: Settings,
    *,
    scored: Collection[str] | None = None,
    protected: Collection[str] = (),
    core: Collection[str] = (),
    unreached: Collection[str] = (),
) -> ActivityDecision:
    """Rank the active topics by sliding average and put the lasting tail to sleep.

    Few active topics → lenient (only averages under the dormancy threshold are at risk, and
    never the best ``min_active``); many → strict (beyond the default count a topic must hold
    the activation threshold). Dormancy is conservative (seed 000 §4.7, §15.6): a topic falls
    asleep only after ``settings.dormancy_rounds`` consecutive scored rounds at risk, never on
    one low round; only ``max_active`` is a hard bound.

    Args:
        topics: The registry's records.
        settings: The thresholds and bounds.
        scored: Topics scored this round; only they advance their at-risk count (a topic
            whose window failed brings no new evidence). None: every scored topic.
        protected: Topics activated this turn (split, recall cue, ``activate_topic``, index
            search): they cannot fall asleep in the turn that woke them.
        core: Core-tier topics (``scoring``): never put to sleep by rank, and ranked first
            for ``max_active``.
        unreached: Topics the governor skipped this turn for their evidence
            (``activation/governor.py``): no score is added for them, but the round counts
            as one at risk, scored or not, so a topic kept out of reach falls asleep after
            ``dormancy_rounds`` such turns as a low-scoring one would.

    ``max_active`` holds for every active topic, woken this turn or never scored (the woken
    ones rank first): the 3–20 range holds at the end of every turn.
    """
    active = [t for t in topics if t["status"] == "active"]
    count = len(active)
    sleep_below = dormancy_threshold(count)
    strict_below = activation_threshold(count)
    average = {t["id"]: sliding_average(t["scores"], settings.score_window) for t in active}
    ranked = rank_active(active, settings, protected=protected, core=core)
    keep: list[str] = []
    dormant: dict[str, str] = {}
    low_rounds: dict[str, int] = {}
    for rank, topic in enumerate(ranked):
        topic_id, mean = topic["id"], average[topic["id"]]
        risk: str | None = None
        if rank >= settings.max_active:
            dormant[topic_id] = f"rank {rank + 1} beyond the maximum of {settings.max_active}"
            continue
        if topic_id in protected or rank < settings.min_active:
            # Woken this turn or within the lower bound: not judged now.
            pass
        elif topic_id in unreached:
            risk = "no evidence in reach of the window"
        elif not topic["scores"]:
            pass  # never scored yet: not judged now
        elif mean < sleep_below:
            risk = (
                f"average {mean:.2f} under the dormancy threshold {sleep_below:.2f}"
                f" at {count} active"
            )
        elif rank >= settings.default_active and mean < strict_below and topic_id not in core:
            risk = (
                f"rank {rank + 1} with average {mean:.2f} under the activation threshold"
                f" {strict_below:.2f} at {count} active"
            )
        previous = topic.get("low_rounds", 0)
        if risk is None:
            rounds = 0
        elif scored is not None and topic_id not in scored and topic_id not in unreached:
            rounds = previous
        else:
            rounds = previous + 1
        if risk is not None and rounds >= settings.dormancy_rounds:
            dormant[topic_id] = f"{risk} for {rounds} rounds"
            continue
        keep.append(topic_id)
        low_rounds[topic_id] = rounds
    return ActivityDecision(keep=keep, dormant=dormant, low_rounds=low_rounds)


def activation_quota(active_count: int, settings: Settings, *, deep: bool) -> int:
    """How many index candidates to activate: many when few are active, few when many are.

    A deep (recall-cue) search may fill up to the maximum; a normal one up to the default. A
    full registry still lets one in (a topic the user asks for must not wait for another to
    fall asleep): the fan-out reads the topics woken this turn first, and the bookkeeping puts
    the weakest past ``max_active`` to sleep at the end of the turn.
    """
    ceiling = settings.max_active if deep else settings.default_active
    room = max(1, settings.max_active - active_count)
    wanted = max(1, ceiling - active_count)
    return min(room, wanted)


def candidate_threshold(active_count: int, *, deep: bool) -> float:
    """Minimum router relevance for activation; a recall cue loosens it by half (§4.7 path 3)."""
    threshold = activation_threshold(active_count)
    return threshold * 0.5 if deep else threshold
