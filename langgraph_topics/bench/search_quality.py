"""``bench search --data``: how often ``TopicMemory.search`` finds a question's evidence, how fast.

Each LoCoMo conversation is imported into a memory (as ``bench recall`` does); then, for every
question of categories 1–4 with evidence, ``search(question, limit=10)`` is asked and a hit is
counted when one of its ten messages is an evidence turn. The baseline in the same run is BM25
over the same turns, its ten best (issue 38: the search must find evidence at least as often).
The latency is each search call's wall time, the thread's stores already open.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langgraph_topics.bench.baselines import Bm25Turns
from langgraph_topics.bench.corpus import locomo_turns, token_cost
from langgraph_topics.bench.recall import bench_questions, load_conversations
from langgraph_topics.bench.report import simple_table

TOP = 10
THREAD = "bench"
Progress = Callable[[str], None]


def run_search_quality(
    data: Path, conversations: Sequence[str] | None, budget: int, progress: Progress
) -> dict[str, Any]:
    """Per conversation: questions, evidence in the top ten (search, BM25), latency."""
    from langgraph_topics.memory import TopicMemory

    rows: list[dict[str, Any]] = []
    latencies: list[float] = []
    for conversation in load_conversations(data, conversations):
        turns = locomo_turns(conversation)
        bm25 = Bm25Turns(turns, token_cost("chars4"))
        questions = bench_questions(conversation, None)
        scratch = Path(tempfile.mkdtemp(prefix=f"bench-search-{conversation.sample_id}-"))
        found = baseline = 0
        own: list[float] = []
        try:
            with TopicMemory(data_dir=scratch, budget_tokens=budget) as memory:
                memory.import_messages(THREAD, conversation.messages)
                memory.wait_idle(THREAD)
                memory.search(THREAD, "warm up")  # the stores open, the model loads: not timed
                for question in questions:
                    evidence = set(question.evidence)
                    started = time.perf_counter()
                    hits = memory.search(THREAD, question.question, limit=TOP)
                    own.append(time.perf_counter() - started)
                    found += any(hit["message_id"] in evidence for hit in hits)
                    ranked = bm25.order(question.question)[:TOP]
                    baseline += any(turns[i].id in evidence for i in ranked)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        latencies += own
        rows.append(
            {
                "conversation": conversation.sample_id,
                "messages": len(turns),
                "questions": len(questions),
                "search_top10": round(found / max(1, len(questions)), 4),
                "bm25_top10": round(baseline / max(1, len(questions)), 4),
                "median_ms": round(1000 * statistics.median(own), 2) if own else None,
            }
        )
        progress(
            f"{conversation.sample_id}: search {found}/{len(questions)}, "
            f"BM25 {baseline}/{len(questions)}"
        )
    asked = sum(r["questions"] for r in rows)
    return {
        "budget": budget,
        "rows": rows,
        "questions": asked,
        "search_top10": round(
            sum(r["search_top10"] * r["questions"] for r in rows) / max(1, asked), 4
        ),
        "bm25_top10": round(sum(r["bm25_top10"] * r["questions"] for r in rows) / max(1, asked), 4),
        "median_ms": round(1000 * statistics.median(latencies), 2) if latencies else None,
    }


def search_quality_table(report: dict[str, Any]) -> str:
    """The figures for people: one row per conversation, then all of them."""
    header = ["conversation", "messages", "questions", "search top-10", "BM25 top-10", "median ms"]
    body = [
        [
            r["conversation"],
            r["messages"],
            r["questions"],
            f"{r['search_top10']:.3f}",
            f"{r['bm25_top10']:.3f}",
            r["median_ms"],
        ]
        for r in report["rows"]
    ]
    body.append(
        [
            "all",
            sum(r["messages"] for r in report["rows"]),
            report["questions"],
            f"{report['search_top10']:.3f}",
            f"{report['bm25_top10']:.3f}",
            report["median_ms"],
        ]
    )
    title = (
        "evidence in the ten best messages: TopicMemory.search against BM25 over turns "
        f"(memory budget {report['budget']:,})"
    )
    return title + "\n\n" + simple_table(header, body)
