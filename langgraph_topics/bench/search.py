"""``bench search``: a whole-thread evidence search against the history length.

The retrieval index of a thread (``retrieval/message_index.py``) is filled with synthetic
messages embedded by a hashing embedder (so the figures are the search itself, not a model),
then the same query mix is scored at each size; the baseline in the same run is a plain
Python loop of cosines over the same vectors, what a search without the index's matrix would
cost (cosines only: no BM25, no neighbours, no topic prior).
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.bench.report import simple_table
from langgraph_topics.retrieval.evidence import EvidenceScorer
from langgraph_topics.retrieval.message_index import MessageIndex
from langgraph_topics.state.records import StoredMessage

_WORDS = (
    "kyoto ryokan train station sourdough starter flour stock dividend earnings bike tyre "
    "guitar lesson painting museum concert marathon knee doctor garden tomato budget salary "
    "wedding cousin flight hotel passport recipe oven coffee running shoes camera lens"
).split()


def synthetic_messages(count: int, seed: int = 7) -> list[StoredMessage]:
    """``count`` short messages in order, a new sitting every 40, one topic every 200."""
    rng = random.Random(seed)
    messages: list[StoredMessage] = []
    for index in range(count):
        words = " ".join(rng.choice(_WORDS) for _ in range(12))
        day = 1 + (index // 40) % 28
        messages.append(
            {
                "id": f"m{index}",
                "role": "user" if index % 2 == 0 else "assistant",
                "content": f"message {index}: {words}",
                "timestamp": f"2024-01-{day:02d}T10:{(index % 40):02d}:00",
            }
        )
    return messages


def measure_search(size: int, queries: int = 20) -> dict[str, Any]:
    """Median milliseconds of one evidence search over ``size`` indexed messages."""
    embedder = HashEmbedder()
    index = MessageIndex(None, embedder)
    messages = synthetic_messages(size)
    for start in range(0, size, 5000):
        chunk = messages[start : start + 5000]
        index.add(chunk, [f"topic-{(start + i) // 200}" for i in range(len(chunk))])
    scorer = EvidenceScorer(embedder)
    rng = random.Random(11)
    texts = [" ".join(rng.choice(_WORDS) for _ in range(6)) + f" q{i}" for i in range(queries)]
    unsplit = synthetic_messages(30, seed=3)
    unsplit = [{**m, "id": f"u{i}"} for i, m in enumerate(unsplit)]
    scorer.score(index, "warm up", unsplit)
    timings = []
    for text in texts:
        started = time.perf_counter()
        scorer.score(index, text, unsplit)
        timings.append(time.perf_counter() - started)
    vectors = index.vectors()
    query = np.asarray(embedder.embed([texts[0]])[0], dtype=np.float32)
    started = time.perf_counter()
    cosines = [float(row @ query) for row in vectors]  # a scan, row by row
    sorted(range(len(cosines)), key=cosines.__getitem__, reverse=True)
    loop_ms = (time.perf_counter() - started) * 1000
    median = statistics.median(timings) * 1000
    return {
        "messages": size,
        "median_ms": round(median, 2),
        "max_ms": round(max(timings) * 1000, 2),
        "loop_ms": round(loop_ms, 1),
        "ratio": round(median / loop_ms, 3) if loop_ms else None,
    }


def run_search(sizes: Sequence[int], progress: Callable[[str], None]) -> dict[str, Any]:
    """Measure every size; the report's ``rows`` hold one result per size."""
    rows = []
    for size in sizes:
        progress(f"search: indexing {size:,} synthetic messages")
        rows.append(measure_search(size))
    return {"rows": rows}


def search_table(report: dict[str, Any]) -> str:
    """Messages, median and worst search time, the row-by-row scan and the ratio."""
    rows = [
        [f"{r['messages']:,}", r["median_ms"], r["max_ms"], r["loop_ms"], r["ratio"]]
        for r in report["rows"]
    ]
    headers = ["messages", "median ms", "max ms", "row-by-row scan ms", "ratio"]
    return "whole-thread evidence search (cosine + BM25 + neighbours + topic prior)\n" + (
        simple_table(headers, rows)
    )
