"""Seed 000 §4.8's second archive criterion: "话题内容与当前活跃讨论方向无关".

The current discussion is what the thread talks about now: the briefs of its active topics
that were activated within ``Settings.archive_after_days`` (a topic idle longer is itself an
archive candidate, not the present), and the working set's messages of that period (what is
being said but not yet split into a topic). A thread with none of these has no current
discussion, and nothing is related to it.

A candidate is related when the cosine of its embedded name and brief to any of those texts
(embedded the way duplicates are compared, small talk left out: ``duplicates.profile_text``)
reaches :data:`RELATED_TO_NOW`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from langchain_core.messages import BaseMessage

from langgraph_topics.keywords.small_talk import is_small_talk, without_small_talk
from langgraph_topics.review.criteria import SECONDS_PER_DAY, idle_days
from langgraph_topics.review.duplicates import profile_text
from langgraph_topics.settings import Settings
from langgraph_topics.state.messages import to_stored
from langgraph_topics.state.records import TopicMeta, TopicRecord
from langgraph_topics.stores.protocols import Embedder
from langgraph_topics.stores.topic_records import parse_time

RELATED_TO_NOW = 0.6
"""The cosine from which a dormant topic counts as related to the current discussion.

Between what the embedder (multilingual USE) gives distinct subjects and what it gives one
subject's neighbours: six distinct subjects' native briefs score at most 0.48 against each
other (``tests/test_review_criteria.py``), a duplicate pair 0.89, and a subject's sibling (a
Kyoto trip against an Osaka one, ``tests/test_review_day.py``) 0.74. Keeping a topic
dormant costs little (it waits in the index, no model call); archiving one the discussion is
close to hides it from normal activation when it is most likely wanted, so the threshold sits
nearer the distinct subjects than the duplicates.
"""

WORKING_SET_MESSAGES = 20
"""How many of the newest working-set messages stand for what is being said now."""


@dataclass(frozen=True)
class Nearest:
    """The current-discussion text closest to a topic."""

    similarity: float
    label: str


class CurrentDiscussion:
    """The embedded texts of the current discussion, compared with each candidate.

    Args:
        labelled: ``(label, text)`` pairs; the label names the piece in a reason.
        embedder: The review's embedder.
    """

    def __init__(self, labelled: Sequence[tuple[str, str]], embedder: Embedder) -> None:
        self.labels = [label for label, _ in labelled]
        self.embedder = embedder
        self.vectors = embedder.embed([text for _, text in labelled]) if labelled else []

    def nearest(self, meta: TopicMeta, exclude: str | None = None) -> Nearest | None:
        """The piece most similar to a topic's name and brief (``exclude`` skipped)."""
        if not self.vectors:
            return None
        vector = self.embedder.embed([profile_text(meta["name"], meta["brief"])])[0]
        best: Nearest | None = None
        for label, other in zip(self.labels, self.vectors, strict=True):
            if label == exclude:
                continue
            similarity = sum(a * b for a, b in zip(vector, other, strict=True))
            if best is None or similarity > best.similarity:
                best = Nearest(round(similarity, 4), label)
        return best


def current_pieces(
    topics: Mapping[str, TopicRecord],
    metas: Mapping[str, TopicMeta],
    messages: Sequence[BaseMessage],
    now: datetime,
    settings: Settings,
) -> list[tuple[str, str]]:
    """``(label, text)`` of the current discussion: recent active topics, recent messages.

    Args:
        topics: The registry.
        metas: Store metadata of the registered topics that are in the store.
        messages: The checkpoint's working set.
        now: The time the review judges by.
        settings: ``archive_after_days`` bounds "now".
    """
    pieces: list[tuple[str, str]] = []
    for topic_id, record in topics.items():
        meta = metas.get(topic_id)
        if meta is None or record["status"] != "active":
            continue
        if idle_days(record, now) <= settings.archive_after_days:
            pieces.append((topic_id, profile_text(meta["name"], meta["brief"])))
    said: list[str] = []
    for message in messages[-WORKING_SET_MESSAGES:]:
        if not message.id:
            continue
        stored = to_stored(message)
        if stored["role"] not in ("user", "assistant") or is_small_talk(stored["content"]):
            continue
        when = parse_time(stored.get("timestamp") or "")
        if when is not None and (now - when).total_seconds() > (
            settings.archive_after_days * SECONDS_PER_DAY
        ):
            continue
        said.append(without_small_talk(stored["content"]))
    if said:
        pieces.append(("the working set", "\n".join(said)))
    return pieces
