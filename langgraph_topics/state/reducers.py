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
