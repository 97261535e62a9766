"""Sample topics for the topic-index tests, and the checks they share."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pytest

from langgraph_topics.stores import TopicIndex

TOPICS = {
    "topic-stocks": (
        "股票基本面",
        "讨论股票的基本面分析：市盈率、市净率、财报、估值方法和行业比较。",
    ),
    "topic-pasta": ("Cooking pasta", "Recipes for carbonara and tomato sauce, cooking times."),
    "topic-kyoto": ("Trip to Kyoto", "Travel plans: temples in Kyoto, rail passes, hotels."),
    "topic-python": ("Python typing", "Python programming: asyncio, type hints and mypy."),
}
"""Topic id to (name, brief): one per subject, the first in Chinese."""


def fill(index: TopicIndex, statuses: dict[str, str] | None = None) -> None:
    """Index every sample topic, ``active`` unless ``statuses`` says otherwise."""
    for topic_id, (name, brief) in TOPICS.items():
        index.upsert(topic_id, name, brief, status=(statuses or {}).get(topic_id, "active"))


def ids(hits: Sequence[tuple[str, float]]) -> list[str]:
    """The topic ids of search hits, best first."""
    return [topic_id for topic_id, _ in hits]


def unique_collection() -> str:
    """A collection name no other test uses (tests share one Chroma server)."""
    return f"test-{uuid.uuid4().hex}"


def assert_same_hits(
    hits: Sequence[Sequence[object]], expected: Sequence[Sequence[object]], tolerance: float
) -> None:
    """Assert the same topics in the same order, with scores equal within ``tolerance``.

    Hits are ``(topic id, score)`` pairs, or lists of two after a JSON round trip.
    """
    assert [hit[0] for hit in hits] == [hit[0] for hit in expected]
    for (_, score), (_, wanted) in zip(hits, expected, strict=True):
        assert score == pytest.approx(wanted, abs=tolerance)
