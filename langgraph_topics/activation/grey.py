"""Grey (graded) activation: sliding averages, dynamic thresholds, rank-based activation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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


@dataclass(frozen=True)
class ActivityDecision:
    """Which active topics stay active and which fall dormant, with the reason."""

    keep: list[str]
    dormant: dict[str, str]


def decide_dormancy(topics: Sequence[TopicRecord], settings: Settings) -> ActivityDecision:
    """Rank the active topics by sliding average and put the tail to sleep.

    Few active topics → lenient (only averages under the dormancy threshold fall asleep, and
    never below ``min_active``); many → strict (beyond the default count a topic must hold the
    activation threshold); never more than ``max_active``.
    """
    active = [t for t in topics if t["status"] == "active"]
    count = len(active)
    sleep_below = dormancy_threshold(count)
    strict_below = activation_threshold(count)
    ranked = sorted(
        active, key=lambda t: sliding_average(t["scores"], settings.score_window), reverse=True
    )
    keep: list[str] = []
    dormant: dict[str, str] = {}
    for rank, topic in enumerate(ranked):
        average = sliding_average(topic["scores"], settings.score_window)
        if rank < settings.min_active or not topic["scores"]:
            # Never below the lower bound; a topic never scored yet has not been judged.
            keep.append(topic["id"])
        elif rank >= settings.max_active:
            dormant[topic["id"]] = f"rank {rank + 1} beyond the maximum of {settings.max_active}"
        elif average < sleep_below:
            dormant[topic["id"]] = (
                f"average {average:.2f} under the dormancy threshold {sleep_below:.2f}"
                f" at {count} active"
            )
        elif rank >= settings.default_active and average < strict_below:
            dormant[topic["id"]] = (
                f"rank {rank + 1} with average {average:.2f} under the activation threshold"
                f" {strict_below:.2f} at {count} active"
            )
        else:
            keep.append(topic["id"])
    return ActivityDecision(keep=keep, dormant=dormant)


def activation_quota(active_count: int, settings: Settings, *, deep: bool) -> int:
    """How many index candidates to activate: many when few are active, few when many are.

    A deep (recall-cue) search may fill up to the maximum; a normal one up to the default.
    """
    ceiling = settings.max_active if deep else settings.default_active
    room = max(0, settings.max_active - active_count)
    wanted = max(1, ceiling - active_count)
    return min(room, wanted)


def candidate_threshold(active_count: int, *, deep: bool) -> float:
    """Minimum router relevance for activation; a recall cue loosens it by half (§4.7 path 3)."""
    threshold = activation_threshold(active_count)
    return threshold * 0.5 if deep else threshold
