"""Scripted role back ends that record their calls (deterministic, offline)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from langgraph_topics.roles.protocols import (
    ResponderReply,
    Roles,
    TopicInfo,
    TopicVerdict,
    TopicWindow,
)
from langgraph_topics.state.records import AssembledContext, StoredMessage


@dataclass
class RecordingTopicWindow:
    """Wraps a topic window: records which topics were read, when, and in which thread."""

    inner: TopicWindow
    delay: float = 0.0
    calls: list[tuple[str, float, float]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def evaluate(
        self,
        topic: TopicInfo,
        topic_messages: Sequence[StoredMessage],
        unsplit: Sequence[StoredMessage],
    ) -> TopicVerdict:
        start = time.perf_counter()
        if self.delay:
            time.sleep(self.delay)
        verdict = self.inner.evaluate(topic, topic_messages, unsplit)
        with self._lock:
            self.calls.append((topic["id"], start, time.perf_counter()))
        return verdict

    def topics_read(self) -> list[str]:
        with self._lock:
            return [topic_id for topic_id, _, _ in self.calls]

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()


@dataclass
class FixedScoreTopicWindow:
    """Scores every topic with ``score_of(topic)``; references its first message."""

    score_of: Callable[[TopicInfo], float]

    def evaluate(
        self,
        topic: TopicInfo,
        topic_messages: Sequence[StoredMessage],
        unsplit: Sequence[StoredMessage],
    ) -> TopicVerdict:
        score = self.score_of(topic)
        return {
            "relevance_score": score,
            "referenced_message_ids": [topic_messages[0]["id"]] if topic_messages else [],
            "summary": f"about {topic['name']}",
        }


@dataclass
class ActivatingResponder:
    """Asks for activation on its first call of each turn where ``wants(context)``, then answers."""

    query: str
    wants: Callable[[AssembledContext], bool] = lambda context: True
    calls: list[bool] = field(default_factory=list)

    def respond(self, context: AssembledContext, *, can_activate: bool) -> ResponderReply:
        self.calls.append(can_activate)
        if can_activate and self.wants(context):
            return {"text": "", "activate_query": self.query}
        return {"text": "answered", "activate_query": None}


def with_roles(base: Roles, **replacements: object) -> Roles:
    """A copy of ``base`` with some roles replaced."""
    return Roles(**{**base.__dict__, **replacements})  # type: ignore[arg-type]


def context_of(messages: list[StoredMessage]) -> AssembledContext:
    """A minimal assembled window holding ``messages`` (for responder tests)."""
    return {
        "messages": messages,
        "referenced_messages": [],
        "message_ids": [m["id"] for m in messages],
        "recent_ids": [m["id"] for m in messages],
        "system_prompt": "You are helpful.",
        "tokens": 10,
        "budget": 100,
        "sections": {"system": 5, "topics": 0, "unsplit": 0, "recent": 5},
        "topic_ids": [],
        "trimmed": [],
    }
