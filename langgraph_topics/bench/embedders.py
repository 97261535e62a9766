"""``bench embedders``: which offline embedder serves the evidence score best, for its cost.

Each embedder indexes every turn of the conversations (timed: what an import pays), then every
question is scored with the product's own evidence score (``retrieval/evidence.py``; a
session stands in for a topic) and the turns are packed best first into each budget, as the
retrieval baselines are. Recall here is the ranking alone, without the window's fixed parts.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langgraph_topics.bench.corpus import TokenEstimate, locomo_turns, token_cost
from langgraph_topics.bench.metrics import evidence_recall
from langgraph_topics.bench.packing import pack
from langgraph_topics.bench.recall import bench_questions, load_conversations
from langgraph_topics.bench.report import simple_table
from langgraph_topics.retrieval.evidence import EvidenceScorer
from langgraph_topics.retrieval.message_index import MessageIndex
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.embeddings import E5Embedder, UseEmbedder
from langgraph_topics.stores.protocols import Embedder

EMBEDDERS: dict[str, Callable[[], Embedder]] = {"use": UseEmbedder, "e5": E5Embedder}
"""The embedders this benchmark knows, by name."""


def run_embedders(
    data: Path,
    names: Sequence[str],
    budgets: Sequence[int],
    estimate: TokenEstimate,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    """Index and query every conversation with each embedder; one result row per embedder."""
    conversations = load_conversations(data, None)
    cost = token_cost(estimate)
    rows = []
    for name in names:
        try:
            embedder = EMBEDDERS[name]()
            embedder.embed(["warm up"])
        except ImportError as error:
            progress(f"{name}: skipped ({error})")
            continue
        recalls: dict[int, list[float]] = {b: [] for b in budgets}
        embed_seconds = 0.0
        texts = 0
        query_ms: list[float] = []
        for conversation in conversations:
            progress(f"{name}: {conversation.sample_id}")
            turns = locomo_turns(conversation)
            messages: list[StoredMessage] = [
                {
                    "id": m["id"],
                    "role": m["role"],
                    "content": m["content"],
                    "name": m["name"],
                    "timestamp": m["timestamp"],
                }
                for m in conversation.messages
            ]
            index = MessageIndex(None, embedder)
            started = time.perf_counter()
            index.add(messages, [f"session-{t.session}" for t in turns])
            embed_seconds += time.perf_counter() - started
            texts += len(messages)
            scorer = EvidenceScorer(embedder)
            costs = [cost(turn.text) for turn in turns]
            for question in bench_questions(conversation, None):
                started = time.perf_counter()
                evidence = scorer.score(index, question.question, [])
                order = evidence.top(len(turns))
                query_ms.append((time.perf_counter() - started) * 1000)
                for budget in budgets:
                    chosen, _ = pack(order, costs, budget)
                    present = {turns[i].id for i in chosen}
                    recalls[budget].append(evidence_recall(question.evidence, present))
        rows.append(
            {
                "embedder": name,
                "recall": {str(b): round(statistics.mean(v), 3) for b, v in recalls.items()},
                "texts_per_second": round(texts / embed_seconds, 1),
                "query_ms": round(statistics.median(query_ms), 1),
            }
        )
    return {"data": str(data), "budgets": list(budgets), "token_estimate": estimate, "rows": rows}


def embedders_table(report: dict[str, Any]) -> str:
    """Recall at each budget, encoding speed and query time per embedder, and the ratios."""
    budgets = [str(b) for b in report["budgets"]]
    rows = report["rows"]
    base = rows[0] if rows else None
    table = [
        [
            r["embedder"],
            *(f"{r['recall'][b]:.3f}" for b in budgets),
            r["texts_per_second"],
            f"{base['texts_per_second'] / r['texts_per_second']:.1f}×" if base else "-",
            r["query_ms"],
        ]
        for r in rows
    ]
    headers = ["embedder", *(f"{int(b):,}" for b in budgets), "texts/s", "import cost", "query ms"]
    return (
        "evidence recall of the evidence score alone (turns packed best first), per embedder\n"
        + simple_table(headers, table)
    )
