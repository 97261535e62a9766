"""Check a migrated thread on the target: its invariants, and a context query against the source.

``check`` runs on the target as it would on any thread. The context query asks both memories
for the window of the thread's last user message: the same topics, briefs, messages and
retrieval must bring back the same message ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langgraph_topics.memory import ContextReport, TopicMemory


@dataclass(frozen=True)
class ThreadVerification:
    """What verifying one migrated thread found."""

    check_ok: bool
    """Whether ``check`` found every invariant holding on the target."""
    findings: list[str] = field(default_factory=list)
    """The target's ``check`` findings (failures and notes)."""
    messages: int = 0
    """Messages of the thread on the target (``check``'s total)."""
    query: str | None = None
    """The context query (the thread's last user message); None when it has none."""
    source_ids: list[str] = field(default_factory=list)
    target_ids: list[str] = field(default_factory=list)
    """The message ids of the window each side assembled (the query itself left out)."""

    @property
    def same_context(self) -> bool:
        """Whether both sides assembled a window of the same messages, in the same order."""
        return self.source_ids == self.target_ids

    @property
    def ok(self) -> bool:
        """Whether the thread passed: invariants hold and the windows agree."""
        return self.check_ok and self.same_context


def last_user_message(memory: TopicMemory, thread_id: str) -> str | None:
    """The text of the thread's newest user message (None when it has none)."""
    for message in reversed(memory.transcript(thread_id)):
        if message["role"] == "user" and message["content"].strip():
            return message["content"]
    return None


def window_ids(report: ContextReport) -> list[str]:
    """The ids of a context query's window, without the query's own (fresh each time) id."""
    window = report["context"]
    question = window["recent_ids"][-1] if window["recent_ids"] else None
    return [message_id for message_id in window["message_ids"] if message_id != question]


def verify_thread(source: TopicMemory, target: TopicMemory, thread_id: str) -> ThreadVerification:
    """Run ``check`` on the target and compare one context query between both sides."""
    report = target.check(thread_id)
    checked = ThreadVerification(
        check_ok=report.ok,
        findings=list(report.findings),
        messages=report.counts.get("total", 0),
    )
    query = last_user_message(source, thread_id)
    if query is None:
        return checked
    return replace(
        checked,
        query=query,
        source_ids=window_ids(source.context(thread_id, query)),
        target_ids=window_ids(target.context(thread_id, query)),
    )
