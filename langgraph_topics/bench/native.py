"""Run the product itself on a benchmark conversation: import it, then query the window.

Every missing evidence turn is given a reason, read from the stores and the turn's results, so
that a low recall says what limits it:

- ``unsplit, trimmed``: the turn was still in the working set but gave way to the budget;
- ``dormant topic``: its topic was not read this turn (not active, not activated);
- ``topic scored < threshold``: its topic was read but judged unrelated (no references);
- ``not referenced``: its topic was judged related but other messages were quoted;
- ``referenced, trimmed``: it was quoted, then dropped to fit the budget.
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from langgraph_topics.bench.corpus import TokenEstimate, chars_over_four
from langgraph_topics.bench.metrics import all_present, evidence_recall
from langgraph_topics.datasets import LocomoConversation, LocomoQuestion
from langgraph_topics.stores.protocols import Embedder
from langgraph_topics.tokens import TokenCounter, default_token_counter

THREAD = "bench"


@dataclass
class NativeRun:
    """The native back end's answers for one conversation at one budget."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    """One row per question: recall, all_present, tokens, sections, missing reasons."""
    reasons: Counter[str] = field(default_factory=Counter)
    import_seconds: float = 0.0
    query_seconds: float = 0.0
    topics: int = 0


def native_counter(kind: TokenEstimate) -> TokenCounter:
    """The product's token counter matching the baselines' estimate."""
    # characters / 4 unrounded, exactly what the baselines pay; the counter protocol says int
    # but the window arithmetic only adds and compares.
    return cast(TokenCounter, chars_over_four) if kind == "chars4" else default_token_counter()


def run_native(
    conversation: LocomoConversation,
    questions: Sequence[LocomoQuestion],
    *,
    budget: int,
    token_estimate: TokenEstimate,
    work_dir: Path,
    progress: Callable[[str], None] | None = None,
    embedder: Embedder | None = None,
) -> NativeRun:
    """Import the conversation into a fresh memory at ``budget`` and query every question.

    Args:
        conversation: The conversation to import (speaker A as user, B as assistant).
        questions: The questions to ask (each as a context query, nothing stored).
        budget: The main window's token budget (it also drives the split during import).
        token_estimate: ``chars4`` or ``tokenizer``, the same as the baselines'.
        work_dir: A scratch data directory (emptied first).
        progress: Called with a short status line now and then.
        embedder: The memory's embedder (the offline default when omitted).

    Returns:
        Per-question rows and the reasons evidence was missing.
    """
    from langgraph_topics.memory import TopicMemory

    shutil.rmtree(work_dir, ignore_errors=True)
    run = NativeRun()
    started = time.perf_counter()
    with TopicMemory(
        data_dir=work_dir,
        budget_tokens=budget,
        token_counter=native_counter(token_estimate),
        embedder=embedder,
    ) as memory:
        total = len(conversation.messages)

        def imported(done: int) -> None:
            if progress and (done == total or done % 100 < 2):
                progress(f"{conversation.sample_id} @{budget}: imported {done}/{total}")

        memory.import_messages(THREAD, conversation.messages, progress=imported)
        run.import_seconds = time.perf_counter() - started
        located = memory.services.stores(THREAD).topic_store.message_ids()
        run.topics = len(set(located.values()))
        started = time.perf_counter()
        for number, question in enumerate(questions, start=1):
            asked = time.perf_counter()
            report = memory.context(THREAD, question.question)
            latency = time.perf_counter() - asked
            window = report["context"]
            present = set(window["message_ids"])
            results = {r["topic_id"]: r for r in report["topic_results"]}
            reasons = [
                _reason(turn, located, results, memory.settings.reference_threshold)
                for turn in question.evidence
                if turn not in present
            ]
            run.reasons.update(reasons)
            run.reasons["present"] += len(question.evidence) - len(reasons)
            run.rows.append(
                {
                    "recall": evidence_recall(question.evidence, present),
                    "all_present": all_present(question.evidence, present),
                    "tokens": float(window["tokens"]),
                    "sections": dict(window["sections"]),
                    "missing": reasons,
                    "topics_read": len(results),
                    "quoted": len(window["referenced_messages"]),
                    "latency_ms": round(latency * 1000, 1),
                }
            )
            if progress and number % 25 == 0:
                progress(f"{conversation.sample_id} @{budget}: asked {number}/{len(questions)}")
        run.query_seconds = time.perf_counter() - started
    shutil.rmtree(work_dir, ignore_errors=True)
    return run


def _reason(turn: str, located: dict[str, str], results: dict[str, Any], threshold: float) -> str:
    topic = located.get(turn)
    if topic is None:
        return "unsplit, trimmed"
    result = results.get(topic)
    if result is None:
        return "dormant topic"
    if turn in result["referenced_message_ids"]:
        return "referenced, trimmed"
    if result["relevance_score"] < threshold:
        return "topic scored < threshold"
    return "not referenced"
