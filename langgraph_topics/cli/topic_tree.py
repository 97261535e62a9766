"""The ``topics`` table as a tree: each divided topic followed by its subtopics, indented."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph_topics.stores.link_kinds import SUBTOPIC_LINK

TopicRow = Mapping[str, Any]
"""A topic as ``TopicMemory.topics`` lists it (``id``, ``parent_id``, ``message_count``…)."""


def tree_order(topics: Sequence[TopicRow]) -> list[tuple[int, TopicRow]]:
    """The topics with their depth, each parent followed by its subtopics (in list order).

    A topic whose parent is not listed (or a cycle of parents) is a root, so every topic is
    listed exactly once.
    """
    by_id = {str(topic["id"]): topic for topic in topics}
    children: dict[str, list[TopicRow]] = {}
    roots: list[TopicRow] = []
    for topic in topics:
        parent = topic.get("parent_id")
        if parent is not None and str(parent) in by_id and str(parent) != str(topic["id"]):
            children.setdefault(str(parent), []).append(topic)
        else:
            roots.append(topic)
    ordered: list[tuple[int, TopicRow]] = []
    placed: set[str] = set()

    def place(topic: TopicRow, depth: int) -> None:
        topic_id = str(topic["id"])
        if topic_id in placed:
            return
        placed.add(topic_id)
        ordered.append((depth, topic))
        for child in children.get(topic_id, []):
            place(child, depth + 1)

    for root in roots:
        place(root, 0)
    for topic in topics:  # topics caught in a cycle of parents
        place(topic, 0)
    return ordered


def subtree_messages(topics: Sequence[TopicRow]) -> dict[str, int]:
    """Messages held by each topic and its subtopics together."""
    parents = {str(topic["id"]): topic.get("parent_id") for topic in topics}
    totals = {topic_id: 0 for topic_id in parents}
    for topic in topics:
        own = int(topic.get("message_count") or 0)
        current: str | None = str(topic["id"])
        seen: set[str] = set()
        while current is not None and current in totals and current not in seen:
            seen.add(current)
            totals[current] += own
            parent = parents[current]
            current = str(parent) if parent is not None else None
    return totals


def link_counts(topic: TopicRow) -> str:
    """A topic's links for the table, by kind (``merged 1, related 2``; ``-`` for none).

    Subtopic links are left out: the tree's indentation shows them already.
    """
    counts: dict[str, int] = {}
    for link in topic.get("links") or []:
        if link["kind"] != SUBTOPIC_LINK:
            counts[link["kind"]] = counts.get(link["kind"], 0) + 1
    return ", ".join(f"{kind} {count}" for kind, count in counts.items()) or "-"
