"""Benchmarks: evidence recall at a token budget, per-turn overhead, fan-out latency.

Run them with ``langgraph-topics bench recall|overhead|fanout``; see ``benchmarks/README.md``.
"""
