"""``bench recall``: evidence recall at each token budget, the product beside the baselines.

For every question of categories 1–4 with valid evidence, each method picks what goes in the
window at each budget, and the share of the question's evidence turns present is recorded.
All methods see the same turns, the same token estimate and the same budgets, in one run.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from langgraph_topics.activation.date_periods import find_periods
from langgraph_topics.bench.baselines import (
    Baseline,
    Bm25Sessions,
    Bm25Turns,
    EmbeddingTurns,
    FullHistory,
    Recency,
    RrfTurns,
)
from langgraph_topics.bench.corpus import TokenEstimate, locomo_turns, token_cost, total_cost
from langgraph_topics.bench.metrics import all_present, evidence_recall, summarise
from langgraph_topics.bench.native import NativeRun, run_native
from langgraph_topics.datasets import LocomoConversation, LocomoQuestion, load_locomo
from langgraph_topics.stores.embeddings import UseEmbedder

NATIVE = "topic memory (native)"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
Progress = Callable[[str], None]


@dataclass
class RecallConfig:
    """What ``bench recall`` runs."""

    data: Path
    budgets: list[int]
    conversations: list[str] | None = None
    """Sample ids to run (all when ``None``)."""
    limit: int | None = None
    """Questions per conversation (all when ``None``)."""
    token_estimate: TokenEstimate = "chars4"
    native: bool = True
    workers: int = 1
    """Processes for the native runs (one per conversation and budget)."""
    baselines: list[str] = field(default_factory=list)
    """Names of the baselines run (filled in by the run)."""


FORMS = ("dated", "undated")
"""Question forms: naming a day or period ("在2月7号…", "on 8 May 2023") or not. Every question
of the Chinese sets is of one category; their form tells where a change helps and where it
hurts (issue 39 item 3)."""
_ANY_DAY = date(2199, 12, 31)
"""Periods are read from this day: any date a question names is in the past of it."""


def question_form(question: str) -> str:
    """``dated`` when the question names a day or period (``date_periods``), else ``undated``."""
    return "dated" if find_periods(question, _ANY_DAY) else "undated"


def bench_questions(conversation: LocomoConversation, limit: int | None) -> list[LocomoQuestion]:
    """Questions of categories 1–4 with at least one valid evidence turn (first ``limit``)."""
    chosen = [q for q in conversation.questions if q.category in CATEGORIES and q.evidence]
    return chosen[:limit] if limit is not None else chosen


def load_conversations(data: Path, wanted: Sequence[str] | None) -> list[LocomoConversation]:
    """The conversations of a LoCoMo file, optionally only the named ones (in file order)."""
    conversations = load_locomo(data)
    if wanted:
        known = {c.sample_id for c in conversations}
        unknown = [w for w in wanted if w not in known]
        if unknown:
            raise SystemExit(f"unknown conversations: {', '.join(unknown)} (have {sorted(known)})")
        conversations = [c for c in conversations if c.sample_id in wanted]
    return conversations


def baselines_for(
    conversation: LocomoConversation, estimate: TokenEstimate, embedder: UseEmbedder
) -> list[Baseline]:
    """Every baseline over one conversation, sharing one token estimate."""
    turns = locomo_turns(conversation)
    cost = token_cost(estimate)
    bm25 = Bm25Turns(turns, cost)
    embedding = EmbeddingTurns(turns, cost, embedder)
    return [
        Recency(turns, cost),
        bm25,
        Bm25Sessions(turns, cost),
        embedding,
        RrfTurns(bm25, embedding, cost),
        RrfTurns(bm25, embedding, cost, neighbours=True),
        FullHistory(turns, cost),
    ]


def _native_job(
    data: str,
    sample_id: str,
    budget: int,
    estimate: TokenEstimate,
    limit: int | None,
) -> tuple[str, int, NativeRun]:
    """One native run, in a worker process (it reloads the data: cheap, and pickles less)."""
    conversation = load_conversations(Path(data), [sample_id])[0]
    scratch = Path(tempfile.mkdtemp(prefix=f"bench-{sample_id}-{budget}-"))

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    run = run_native(
        conversation,
        bench_questions(conversation, limit),
        budget=budget,
        token_estimate=estimate,
        work_dir=scratch,
        progress=say,
    )
    return sample_id, budget, run


def run_recall(config: RecallConfig, progress: Progress) -> dict[str, Any]:
    """Run every method on every question; returns the report (summary, rows, timings)."""
    started = time.perf_counter()
    conversations = load_conversations(config.data, config.conversations)
    embedder = UseEmbedder()
    rows: list[dict[str, Any]] = []
    history_tokens: dict[str, float] = {}
    for conversation in conversations:
        questions = bench_questions(conversation, config.limit)
        progress(f"{conversation.sample_id}: baselines on {len(questions)} questions")
        baselines = baselines_for(conversation, config.token_estimate, embedder)
        config.baselines = [b.name for b in baselines]
        cost = token_cost(config.token_estimate)
        history_tokens[conversation.sample_id] = total_cost(locomo_turns(conversation), cost)
        for index, question in enumerate(questions):
            results: dict[str, dict[int, dict[str, Any]]] = {}
            for baseline in baselines:
                selections = baseline.select(question.question, config.budgets)
                results[baseline.name] = {
                    budget: {
                        "recall": evidence_recall(question.evidence, s.ids),
                        "all_present": all_present(question.evidence, s.ids),
                        "tokens": round(s.tokens, 2),
                    }
                    for budget, s in selections.items()
                }
            rows.append(
                {
                    "conversation": conversation.sample_id,
                    "index": index,
                    "category": question.category,
                    "form": question_form(question.question),
                    "question": question.question,
                    "evidence": list(question.evidence),
                    "results": results,
                }
            )
    baseline_seconds = time.perf_counter() - started
    timings: dict[str, Any] = {"baselines_seconds": round(baseline_seconds, 1), "native": []}
    reasons: dict[int, Counter[str]] = {budget: Counter() for budget in config.budgets}
    if config.native:
        for sample_id, budget, run in _native_runs(config, conversations, progress):
            mine = [r for r in rows if r["conversation"] == sample_id]
            for row, answer in zip(mine, run.rows, strict=True):
                row["results"].setdefault(NATIVE, {})[budget] = answer
            reasons[budget].update(run.reasons)
            timings["native"].append(
                {
                    "conversation": sample_id,
                    "budget": budget,
                    "messages": next(
                        len(c.messages) for c in conversations if c.sample_id == sample_id
                    ),
                    "questions": len(run.rows),
                    "topics": run.topics,
                    "import_seconds": round(run.import_seconds, 1),
                    "query_seconds": round(run.query_seconds, 1),
                }
            )
    timings["total_seconds"] = round(time.perf_counter() - started, 1)
    return {
        "config": {
            "data": str(config.data),
            "budgets": config.budgets,
            "conversations": [c.sample_id for c in conversations],
            "limit": config.limit,
            "token_estimate": config.token_estimate,
            "workers": config.workers,
        },
        "methods": [*config.baselines, *([NATIVE] if config.native else [])],
        "history_tokens": history_tokens,
        "summary": summarise_rows(rows, config.budgets),
        "native_missing": {str(b): dict(c.most_common()) for b, c in reasons.items() if c},
        "timings": timings,
        "rows": rows,
    }


def _native_runs(
    config: RecallConfig, conversations: Sequence[LocomoConversation], progress: Progress
) -> list[tuple[str, int, NativeRun]]:
    jobs = [
        (str(config.data), c.sample_id, budget, config.token_estimate, config.limit)
        for budget in config.budgets
        for c in conversations
    ]
    progress(f"native: {len(jobs)} runs (conversation × budget), {config.workers} worker(s)")
    if config.workers <= 1:
        return [_native_job(*job) for job in jobs]
    # The graph's own work is single-threaded Python between embedding calls: a second process
    # overlaps it with the first one's embedding, which one process cannot.
    with ProcessPoolExecutor(max_workers=config.workers) as pool:
        futures = [pool.submit(_native_job, *job) for job in jobs]
        return [future.result() for future in futures]


def summarise_rows(
    rows: Sequence[dict[str, Any]], budgets: Sequence[int]
) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """``summary[method][budget][category or "all"]`` → n, recall, all_present, tokens."""
    methods = list(dict.fromkeys(m for row in rows for m in row["results"]))
    summary: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for method in methods:
        summary[method] = {}
        for budget in budgets:
            picked = [
                (row["category"], row["results"][method][budget])
                for row in rows
                if budget in row["results"].get(method, {})
            ]
            per = {"all": summarise(r for _, r in picked)}
            for category in CATEGORIES:
                per[str(category)] = summarise(r for c, r in picked if c == category)
            for form in FORMS:
                per[form] = summarise(
                    row["results"][method][budget]
                    for row in rows
                    if budget in row["results"].get(method, {}) and row.get("form") == form
                )
            summary[method][str(budget)] = per
    return summary
