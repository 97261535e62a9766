"""Reducers of the fan-in keys. Per-turn keys are reset with ``Overwrite`` at the turn's start."""

from __future__ import annotations

from langgraph_topics.state.records import TopicResult, TurnEvent


def merge_topic_results(
    current: dict[str, TopicResult], update: dict[str, TopicResult]
) -> dict[str, TopicResult]:
    """Merge results keyed by topic id; a later result for the same topic replaces the earlier."""
    return {**current, **update}


def append_events(current: list[TurnEvent], update: list[TurnEvent]) -> list[TurnEvent]:
    """Append this step's events to the turn's log."""
    return [*current, *update]


def merge_oversized(current: dict[str, int], update: dict[str, int]) -> dict[str, int]:
    """Add topics refused as too long by parallel topic windows (the largest size kept)."""
    merged = dict(current)
    for topic_id, tokens in update.items():
        merged[topic_id] = max(tokens, merged.get(topic_id, 0))
    return merged
