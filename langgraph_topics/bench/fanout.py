"""``bench fanout``: turn latency against the number of active topics.

Each active topic is read by a fake topic-window model that takes a fixed delay per call.
If the fan-out is parallel, a turn takes about one delay whatever the number of topics; read
one after another it would take ``n × delay``. By default turns run as ``TopicMemory.run_turn``
runs them (``max_concurrency`` = ``Settings.max_active``, so every active topic window of a turn
runs at once); ``--max-concurrency`` runs the graph with LangGraph's cap instead.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig

from langgraph_topics.bench.report import simple_table


def measure_fanout(
    topics: int, delay: float, turns: int, *, max_concurrency: int | None = None
) -> dict[str, Any]:
    """Median turn latency with ``topics`` active topics and a ``delay``-second topic window."""
    from langgraph_topics.bench.fakes import FixedTopicWindow, HashEmbedder, fake_roles
    from langgraph_topics.bench.synthetic import message_text, seed_thread
    from langgraph_topics.memory import TopicMemory
    from langgraph_topics.services import TopicContext

    work = Path(tempfile.mkdtemp(prefix="bench-fanout-"))
    # Every topic fully relevant (its average holds the activation threshold even at 20
    # active, 0.8), so all of
    # them stay active and each turn reads ``topics`` windows.
    roles = fake_roles(delay, score=1.0)
    window = cast(FixedTopicWindow, roles.topic_window)
    with TopicMemory(
        data_dir=work, budget_tokens=8000, roles=roles, embedder=HashEmbedder()
    ) as memory:
        seed_thread(memory, "t", history=30 + 10 * topics, topics=topics, active=topics)
        seconds: list[float] = []
        for number in range(turns):
            payload = {
                "messages": [HumanMessage(message_text(10**7 + number), id=f"q{number}")],
                "mode": "chat",
            }
            started = time.perf_counter()
            if max_concurrency is None:
                # The product's own path and defaults (its max_concurrency, its durability).
                memory.run_turn("t", payload)
            else:
                capped = {
                    "configurable": {"thread_id": "t"},
                    "recursion_limit": 100,
                    "max_concurrency": max_concurrency,
                }
                memory.graph.invoke(
                    cast(Any, payload),
                    cast(RunnableConfig, capped),
                    context=TopicContext(services=memory.services),
                )
            seconds.append(time.perf_counter() - started)
    shutil.rmtree(work, ignore_errors=True)
    median = statistics.median(seconds)
    # Counted from the windows actually read, should bookkeeping have put any to sleep.
    windows = window.calls / turns
    return {
        "topics": topics,
        "delay_s": delay,
        "windows_per_turn": round(windows, 1),
        "median_s": round(median, 3),
        "min_s": round(min(seconds), 3),
        "serial_s": round(windows * delay, 3),
        "speedup": round(windows * delay / median, 2) if median else 0.0,
    }


def run_fanout(
    topics: Sequence[int],
    delay: float,
    turns: int,
    progress: Callable[[str], None],
    *,
    max_concurrency: int | None = None,
) -> dict[str, Any]:
    """Measure each topic count; returns the report."""
    import os

    results = []
    for count in topics:
        progress(f"fanout: {count} active topics, {delay * 1000:.0f} ms per topic window")
        results.append(measure_fanout(count, delay, turns, max_concurrency=max_concurrency))
    return {
        "delay_s": delay,
        "turns": turns,
        "max_concurrency": max_concurrency,
        "cpus": os.cpu_count(),
        "results": results,
    }


def fanout_table(report: dict[str, Any]) -> str:
    """Topics, median turn latency, the ratio to the fewest topics, the serial sum, speed-up."""
    fewest = min(report["results"], key=lambda r: r["topics"])
    rows = [
        [
            r["topics"],
            r["windows_per_turn"],
            r["median_s"],
            r["min_s"],
            f"{r['median_s'] / max(fewest['median_s'], 1e-9):.2f}",
            r["serial_s"],
            f"{r['speedup']:.1f}×",
        ]
        for r in report["results"]
    ]
    headers = [
        "active topics",
        "windows/turn",
        "median s/turn",
        "min s",
        f"÷ {fewest['topics']} topic(s)",
        "windows × delay s",
        "speed-up",
    ]
    return (
        f"turn latency, topic window {report['delay_s'] * 1000:.0f} ms per call"
        f" (max_concurrency {report['max_concurrency'] or 'default'})\n"
        + simple_table(headers, rows)
    )
