"""The outcome of a migration: one row per thread, as a table or JSON shows it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph_topics.migration.verify import ThreadVerification


@dataclass
class ThreadMigration:
    """What migrating one thread did and found."""

    thread_id: str
    checkpoints: int = 0
    """Checkpoints of the thread (the source's, every namespace)."""
    copied_checkpoints: int = 0
    """Of them, written by this run (0 when a previous run copied them all)."""
    topics: int = 0
    copied_records: int = 0
    """Topic records (messages, briefs, links…) written by this run."""
    messages: int = 0
    """Messages of the thread on the target (``check``'s total)."""
    verification: ThreadVerification | None = None

    @property
    def ok(self) -> bool:
        """Whether the target's thread passed ``check`` and answered the same context."""
        return self.verification is not None and self.verification.ok

    def as_json(self) -> dict[str, Any]:
        """The thread's row as plain JSON values."""
        verification = self.verification
        return {
            "thread": self.thread_id,
            "checkpoints": self.checkpoints,
            "copied_checkpoints": self.copied_checkpoints,
            "topics": self.topics,
            "copied_records": self.copied_records,
            "messages": self.messages,
            "check": verification.check_ok if verification else None,
            "findings": verification.findings if verification else [],
            "same_context_ids": verification.same_context if verification else None,
            "context_query": verification.query if verification else None,
            "ok": self.ok,
        }


@dataclass
class MigrationReport:
    """The outcome of a migration, one row per thread."""

    source: Path
    target: str
    """The target database's URI, its password left out."""
    threads: list[ThreadMigration] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every thread passed its verification."""
        return all(thread.ok for thread in self.threads)

    def as_json(self) -> dict[str, Any]:
        """The report as plain JSON values."""
        return {
            "source": str(self.source),
            "target": self.target,
            "ok": self.ok,
            "threads": [thread.as_json() for thread in self.threads],
        }
