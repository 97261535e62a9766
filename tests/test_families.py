"""Subtopic families: each subtopic's root, on deep chains, unknown parents and cycles."""

from __future__ import annotations

from typing import Any

from langgraph_topics.subtopics.families import prior_families


def _registry(parents: dict[str, str | None]) -> dict[str, Any]:
    return {topic_id: {"id": topic_id, "parent_id": parent} for topic_id, parent in parents.items()}


def test_a_deep_chain_maps_every_subtopic_to_the_top() -> None:
    # A long thread's subtopics are divided again and again: t1 from t0, t2 from t1, ...
    parents: dict[str, str | None] = {"t0": None}
    parents.update({f"t{n}": f"t{n - 1}" for n in range(1, 300)})
    # Children listed before their parents, as a registry may hold them.
    families = prior_families(_registry(dict(reversed(parents.items()))))
    assert families == {f"t{n}": "t0" for n in range(1, 300)}


def test_an_unknown_parent_ends_the_walk_and_roots_are_left_out() -> None:
    families = prior_families(
        _registry({"root": None, "a": "root", "b": "a", "orphan": "gone", "c": "orphan"})
    )
    assert families == {"a": "root", "b": "root", "c": "orphan"}


def test_a_cycle_ends_where_it_closes_for_each_topic() -> None:
    # x -> y -> z -> x, and w hangs below x: each walk stops before the topic it started on
    # would come round again.
    families = prior_families(_registry({"x": "z", "y": "x", "z": "y", "w": "x"}))
    assert families == {"x": "y", "y": "z", "z": "x", "w": "y"}
