"""Which topics a review merges: near-duplicates by brief similarity *and* shared keywords.

Seed 000 §4.8 merges topics that "talk about the same thing" and warns against forcing
messages into a topic that does not fit, so both signals must agree: the cosine of the embedded
name and brief at least ``Settings.merge_similarity`` (0.85), and at least
``Settings.merge_shared_keywords`` (3) of each topic's ``merge_keywords`` (12) most
characteristic keywords in common. Only siblings (same parent, neither with subtopics of its
own) are compared, so the topic hierarchy is never rearranged by a merge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from langgraph_topics.keywords import top_keywords
from langgraph_topics.settings import Settings
from langgraph_topics.state.records import StoredMessage


@dataclass(frozen=True)
class TopicProfile:
    """What the comparison knows of one topic."""

    topic_id: str
    parent_id: str | None
    keywords: frozenset[str]
    vector: Sequence[float]
    """The embedded name and brief (unit length)."""
    rank: int
    """Its place among the thread's topics, oldest first: the older of a pair is kept."""


@dataclass(frozen=True)
class MergePair:
    """Two topics to merge: ``retire``'s messages go to ``keep``."""

    keep: str
    retire: str
    similarity: float
    shared: tuple[str, ...]


def profile_text(name: str, brief: str) -> str:
    """The text a topic is embedded by: its name and brief (its activation fingerprint)."""
    return f"{name}\n{brief}"


def topic_keywords(messages: Sequence[StoredMessage], limit: int) -> frozenset[str]:
    """A topic's most characteristic keywords, from its prose messages."""
    texts = [m["content"] for m in messages if m["role"] in ("user", "assistant")]
    return frozenset(k for k in top_keywords(texts, limit) if not k.isdigit())


def merge_pairs(
    profiles: Sequence[TopicProfile], parents: Mapping[str, str | None], settings: Settings
) -> list[MergePair]:
    """Every pair of topics both signals call duplicates, most similar first.

    Args:
        profiles: The topics that may merge (not archived).
        parents: Every registered topic's parent, to tell which topics have subtopics.
        settings: The thresholds.
    """
    with_children = {parent for parent in parents.values() if parent is not None}
    eligible = [p for p in profiles if p.topic_id not in with_children]
    pairs: list[MergePair] = []
    for index, first in enumerate(eligible):
        for second in eligible[index + 1 :]:
            if first.parent_id != second.parent_id:
                continue
            similarity = sum(a * b for a, b in zip(first.vector, second.vector, strict=True))
            shared = first.keywords & second.keywords
            if similarity < settings.merge_similarity:
                continue
            if len(shared) < settings.merge_shared_keywords:
                continue
            keep, retire = (first, second) if first.rank <= second.rank else (second, first)
            pairs.append(
                MergePair(
                    keep.topic_id, retire.topic_id, round(similarity, 4), tuple(sorted(shared))
                )
            )
    return sorted(pairs, key=lambda pair: (-pair.similarity, pair.keep, pair.retire))
