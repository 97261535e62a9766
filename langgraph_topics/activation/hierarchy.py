"""Topics divided into subtopics are reached through their children (seed 000 §8).

A divided topic (status ``split``) holds no messages of its own and is never read itself;
its brief still names what its children hold, so an index search may find it. Such a hit, or
an explicit request for it, goes to its subtopics, which are read like any topic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from langgraph_topics.state.records import TopicRecord


def leaves(topics: Mapping[str, TopicRecord], topic_id: str) -> list[str]:
    """The registered topics that hold ``topic_id``'s messages: itself, or its subtopics'.

    Children unknown to the registry are skipped, and a cycle (hand-edited records) stops the
    walk, so a damaged registry never loops.
    """
    found: list[str] = []
    pending = [topic_id]
    seen: set[str] = set()
    while pending:
        current = pending.pop(0)
        if current in seen or current not in topics:
            continue
        seen.add(current)
        record = topics[current]
        children = record.get("children") or []
        if record["status"] == "split" and children:
            pending[:0] = children
        else:
            found.append(current)
    return found


def through_children(
    hits: Iterable[tuple[str, float]], topics: Mapping[str, TopicRecord]
) -> list[tuple[str, float]]:
    """Search hits with each divided topic's hit handed to its subtopics (best score kept).

    Args:
        hits: ``(topic_id, similarity)`` pairs, best first.
        topics: The registry.

    Returns:
        The same kind of pairs, no topic twice, in the order first reached.
    """
    best: dict[str, float] = {}
    for topic_id, score in hits:
        for leaf in leaves(topics, topic_id) if topic_id in topics else [topic_id]:
            best[leaf] = max(score, best.get(leaf, score))
    return list(best.items())
