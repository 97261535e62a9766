"""Per-call statistics of the model roles, collected per thread until the turn is logged.

Role back ends are shared by every thread and topic windows run in parallel worker threads, so
a call cannot hand its numbers to the turn directly. Each call records into the collector of the
run it belongs to (found through the run's services), under the run's thread id; the
``bookkeeping`` node drains that thread's records into the turn's tuning-log line.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, TypedDict


@dataclass
class CallRecord:
    """What one role call cost and how it went."""

    role: str
    latency_s: float = 0.0
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    retries: int = 0
    """Provider retries (timeouts, 429, 5xx, refused connections)."""
    format_retries: int = 0
    """Retries of a malformed reply with the error fed back."""
    fallback: bool = False
    """The native back end served this call."""
    failed: bool = False
    """The call raised (the node then degrades one step)."""
    dropped_ids: int = 0
    """Unknown message ids dropped from the reply."""
    topic_id: str | None = None
    prefix_share: float | None = None
    """Share of the prompt that is a prefix of the same topic's previous prompt."""
    errors: list[str] = field(default_factory=list)


class RoleTotals(TypedDict):
    """One role's totals over a turn, as the tuning log shows them."""

    calls: int
    latency_s: float
    input_tokens: int
    cached_tokens: int
    output_tokens: int
    retries: int
    format_retries: int
    fallbacks: int
    failures: int
    dropped_ids: int


def role_totals(records: list[CallRecord]) -> dict[str, RoleTotals]:
    """Sum the records of one turn per role."""
    totals: dict[str, RoleTotals] = {}
    for record in records:
        total = totals.setdefault(
            record.role,
            {
                "calls": 0,
                "latency_s": 0.0,
                "input_tokens": 0,
                "cached_tokens": 0,
                "output_tokens": 0,
                "retries": 0,
                "format_retries": 0,
                "fallbacks": 0,
                "failures": 0,
                "dropped_ids": 0,
            },
        )
        total["calls"] += 1
        total["latency_s"] = round(total["latency_s"] + record.latency_s, 4)
        total["input_tokens"] += record.input_tokens
        total["cached_tokens"] += record.cached_tokens
        total["output_tokens"] += record.output_tokens
        total["retries"] += record.retries
        total["format_retries"] += record.format_retries
        total["fallbacks"] += int(record.fallback)
        total["failures"] += int(record.failed)
        total["dropped_ids"] += record.dropped_ids
    return totals


class RoleStatsCollector:
    """Thread-safe pending call records, keyed by conversation thread.

    Args:
        max_pending: Most records kept per thread; older ones are discarded (a thread whose turns
            never reach the bookkeeping node, e.g. imports without a log, cannot grow it forever).
    """

    def __init__(self, max_pending: int = 2000) -> None:
        self.max_pending = max_pending
        self._pending: dict[str, list[CallRecord]] = {}
        self._lock = threading.Lock()

    def record(self, thread_id: str, record: CallRecord) -> None:
        """Add one call's record to the thread's pending ones."""
        with self._lock:
            pending = self._pending.setdefault(thread_id, [])
            pending.append(record)
            del pending[: max(0, len(pending) - self.max_pending)]

    def drain(self, thread_id: str) -> list[CallRecord]:
        """Take (and forget) every pending record of the thread."""
        with self._lock:
            return self._pending.pop(thread_id, [])

    def peek(self, thread_id: str) -> list[CallRecord]:
        """The pending records of the thread, left in place."""
        with self._lock:
            return list(self._pending.get(thread_id, []))


def current_collector() -> tuple[RoleStatsCollector, str] | None:
    """The collector and thread id of the run this call belongs to (``None`` outside a run)."""
    from langgraph.runtime import get_runtime

    try:
        runtime: Any = get_runtime()
    except (RuntimeError, KeyError):
        return None
    from langgraph_topics.services import services_of, thread_id_of

    collector = getattr(services_of(runtime), "role_stats", None)
    if not isinstance(collector, RoleStatsCollector):
        return None
    return collector, thread_id_of(runtime)
