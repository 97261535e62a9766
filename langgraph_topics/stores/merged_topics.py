"""Topics merged into others by the review: what a ``merged`` record means to both stores.

A merge moves no message and copies none. It is one record in the retired topic's own stream,
``{"type": "merged", "into": <target id>, "merged_at": ...}``, written in one line (one item),
so a crash leaves the merge either whole or absent; and, being numbered like every record, it
follows the checkpoint's ``store_ranges`` like the rest: a branch that never recorded it still
sees two topics. From that record on, the retired topic's messages belong to the target: the
target's messages are both topics' in conversation order, every id stays stored exactly once
(invariant 1 in the files as well as in the index), and each topic's file keeps its own brief
history.

The functions here work on the stores' in-memory index (anything with ``merged_into``), so the
JSONL store and the ``BaseStore`` one share them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from langgraph_topics.state.records import StoredMessage

MERGED = "merged"
"""The record type of a merge."""


class Mergeable(Protocol):
    """A topic of a store's index: it may have been merged into another."""

    merged_into: str | None


def merge_record(into_id: str, merged_at: str) -> dict[str, Any]:
    """The record retiring a topic into ``into_id`` (stored in the retired topic's stream)."""
    return {"type": MERGED, "into": into_id, "merged_at": merged_at}


def merged_target(record: Mapping[str, Any]) -> str | None:
    """The target a ``merged`` record names; None when it names none (a damaged record)."""
    target = record.get("into")
    return target if isinstance(target, str) and target else None


def live_topic(topics: Mapping[str, Mergeable], topic_id: str) -> str:
    """The topic that holds ``topic_id``'s messages now: itself, or the end of its merges.

    A target the branch does not know (a damaged record) or a cycle (records edited by hand)
    stops the walk, so the messages stay with the last known topic instead of vanishing.
    """
    seen = {topic_id}
    current = topic_id
    while True:
        topic = topics.get(current)
        target = topic.merged_into if topic is not None else None
        if target is None or target in seen or target not in topics:
            return current
        seen.add(target)
        current = target


def members(topics: Mapping[str, Mergeable], topic_id: str) -> list[str]:
    """``topic_id`` and every topic whose messages it holds through merges, itself first."""
    found = [topic_id]
    for other in topics:
        if other != topic_id and topics[other].merged_into is not None:
            if live_topic(topics, other) == topic_id:
                found.append(other)
    return found


def combined(
    parts: Sequence[Sequence[StoredMessage]], time_of: Callable[[StoredMessage], datetime]
) -> tuple[list[StoredMessage], dict[str, int]]:
    """The messages of merged topics in conversation order, and each one's index among them.

    Ordered by time; a stable sort keeps each topic's own order among equal times, and the
    target's messages before the retired ones' at the same time.
    """
    indexed = [
        (time_of(message), part, place, message)
        for part, messages in enumerate(parts)
        for place, message in enumerate(messages)
    ]
    indexed.sort(key=lambda item: (item[0], item[1], item[2]))
    ordered = [message for _, _, _, message in indexed]
    positions: dict[str, int] = {}
    for place, message in enumerate(ordered):
        positions.setdefault(message["id"], place)
    return ordered, positions
