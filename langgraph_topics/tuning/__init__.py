"""Tuning data (seed 000 §16): per-call role statistics and the per-thread tuning log."""

from langgraph_topics.tuning.role_stats import CallRecord, RoleStatsCollector, RoleTotals

__all__ = ["CallRecord", "RoleStatsCollector", "RoleTotals"]
