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
from langgraph_topics.keywords.small_talk import is_filler_word, is_small_talk, without_small_talk
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
    """The text a topic is embedded by: its name and brief, small talk and stop words left out.

    A brief listing reactions ("Wow, Mel! Amazing!") embeds close to every other such brief
    whatever the subject; only the words naming something are compared.
    """
    return f"{without_small_talk(name)}\n{without_small_talk(brief)}"


def topic_keywords(messages: Sequence[StoredMessage], limit: int) -> frozenset[str]:
    """A topic's most characteristic keywords, from its prose messages that say something.

    Small-talk messages are left out, and so is any small-talk or stop word among the
    keywords: two topics sharing "wow, amazing, thanks" share no subject.
    """
    texts = [
        m["content"]
        for m in messages
        if m["role"] in ("user", "assistant") and not is_small_talk(m["content"])
    ]
    ranked = top_keywords(texts, 2 * limit)
    return frozenset([k for k in ranked if not k.isdigit() and not is_filler_word(k)][:limit])


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
    common = thread_wide_keywords(profiles)
    pairs: list[MergePair] = []
    for index, first in enumerate(eligible):
        for second in eligible[index + 1 :]:
            if first.parent_id != second.parent_id:
                continue
            similarity = sum(a * b for a, b in zip(first.vector, second.vector, strict=True))
            shared = (first.keywords & second.keywords) - common
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


COMMON_SHARE = 0.5
"""A keyword in more than this share of a thread's topics says nothing about any one of them."""
COMMON_MIN_TOPICS = 4
"""Fewer topics than this tell no thread-wide word from a shared subject."""


def thread_wide_keywords(profiles: Sequence[TopicProfile]) -> frozenset[str]:
    """Keywords most of the thread's topics share (the speakers' names, a running joke).

    In a conversation between two people their names are in nearly every topic's keywords
    ("Mel" throughout LoCoMo conv-26): shared by a pair, they say nothing about a subject.
    """
    if len(profiles) < COMMON_MIN_TOPICS:
        return frozenset()
    counts: dict[str, int] = {}
    for profile in profiles:
        for keyword in profile.keywords:
            counts[keyword] = counts.get(keyword, 0) + 1
    return frozenset(k for k, n in counts.items() if n > COMMON_SHARE * len(profiles))
