"""Zero-latency stand-ins for the model roles and the embedder, to time the graph alone."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Sequence

import numpy as np

from langgraph_topics.roles.protocols import (
    ResponderReply,
    Roles,
    RoutedTopic,
    SplitPlan,
    TopicInfo,
    TopicVerdict,
)
from langgraph_topics.state.records import AssembledContext, StoredMessage

_DIMENSIONS = 64


class HashEmbedder:
    """Bag-of-words vectors from hashed words: deterministic, instant, meaningless.

    Args:
        dimensions: Vector size; benchmarks of disk and search cost pass the default
            embedder's (512), so the index weighs what it would in use.
    """

    def __init__(self, dimensions: int = _DIMENSIONS) -> None:
        self.dimensions = dimensions

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text."""
        rows = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split() or [" "]:
                digest = hashlib.blake2b(word.encode("utf-8"), digest_size=2).digest()
                rows[row, int.from_bytes(digest, "big") % self.dimensions] += 1.0
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return (rows / np.where(norms == 0, 1.0, norms)).tolist()  # type: ignore[no-any-return]


class FirstTopicSplitter:
    """Sends every unit to the first open topic (or one new topic)."""

    def split(
        self, units: Sequence[Sequence[StoredMessage]], topics: Sequence[TopicInfo]
    ) -> SplitPlan:
        """One assignment holding every message."""
        ids = [m["id"] for unit in units for m in unit]
        open_topics = [t for t in topics if t["status"] == "active"]
        if open_topics:
            return {
                "assignments": [
                    {"message_ids": ids, "topic_id": open_topics[0]["id"], "new_key": None}
                ],
                "new_topics": [],
            }
        return {
            "assignments": [{"message_ids": ids, "topic_id": None, "new_key": "new-1"}],
            "new_topics": [{"key": "new-1", "name": "synthetic", "brief": "synthetic topic"}],
        }


class FixedTopicWindow:
    """Scores every topic ``score`` and quotes its last two messages, after ``delay`` seconds.

    Args:
        delay: Seconds each call sleeps, standing in for a model's latency (0 for none).
        score: The relevance of every topic (high enough, every active topic stays active).
    """

    def __init__(self, delay: float = 0.0, score: float = 0.6) -> None:
        self.delay = delay
        self.score = score
        self.calls = 0
        self._lock = threading.Lock()

    def evaluate(
        self,
        topic: TopicInfo,
        topic_messages: Sequence[StoredMessage],
        unsplit: Sequence[StoredMessage],
    ) -> TopicVerdict:
        """A fixed verdict."""
        with self._lock:
            self.calls += 1
        if self.delay:
            time.sleep(self.delay)
        return {
            "relevance_score": self.score,
            "referenced_message_ids": [m["id"] for m in topic_messages[-2:]],
            "summary": f"About {topic['name']}.",
        }


class KeepBriefWriter:
    """Keeps the name and brief as they are."""

    def write(self, topic: TopicInfo, messages: Sequence[StoredMessage]) -> tuple[str, str]:
        """The topic's current name and brief."""
        return topic["name"] or "synthetic", topic["brief"] or "synthetic topic"


class SimilarityRouter:
    """Ranks candidates by their index similarity."""

    def route(
        self, query: str, candidates: Sequence[tuple[TopicInfo, float]], *, deep: bool
    ) -> list[RoutedTopic]:
        """Candidates in index order."""
        return [
            {"topic_id": t["id"], "relevance": float(s), "reason": "index similarity"}
            for t, s in candidates
        ]


class EchoResponder:
    """Answers with a fixed short text."""

    def respond(self, context: AssembledContext, *, can_activate: bool) -> ResponderReply:
        """A short acknowledgement."""
        return {"text": "Noted.", "activate_query": None}


def fake_roles(delay: float = 0.0, score: float = 0.6) -> Roles:
    """Every role answered instantly (the topic window after ``delay`` seconds)."""
    return Roles(
        splitter=FirstTopicSplitter(),
        topic_window=FixedTopicWindow(delay, score),
        brief_writer=KeepBriefWriter(),
        index_router=SimilarityRouter(),
        responder=EchoResponder(),
    )
