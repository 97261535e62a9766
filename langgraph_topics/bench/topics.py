"""``bench topics``: how well the memory's topics hold together, beside baselines, in one run.

Each conversation is imported into a fresh memory at each budget with the offline native back
ends (exactly as ``bench recall`` imports it), and the resulting topics are read back. The
memory's partition is its topics plus the unsplit tail as one more block (see
``bench/partitions.py``). Measured on LoCoMo:

- **evidence spread**: for questions of categories 1–4 with at least two evidence turns,
  ``(topics spanned − 1) / (evidence turns − 1)``, the mean over questions (pooled over the
  conversations). 0: what a question needs sits in one topic; 1: every evidence turn in its
  own. Held against one topic per LoCoMo session and two random partitions with exactly the
  memory's block sizes (contiguous runs, and scattered messages; the mean of ``draws`` seeded
  draws each);
- **topics per 100 messages** (pooled), **largest topic share** (the mean over conversations of
  the largest topic's share of the messages), **one-message topics** (pooled share of topics).

On MemoryBank (each user's days concatenated into one conversation; ``bench/subjects.py`` says
how a recurring subject is found): **topics per recurring subject**, the mean number of blocks
holding a subject's exchanges, beside the days it is mentioned on (one topic per day) and the
same two random partitions.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

from langgraph_topics.bench.corpus import TokenEstimate
from langgraph_topics.bench.native import THREAD, native_counter
from langgraph_topics.bench.partitions import (
    Partition,
    Shape,
    block_sizes,
    blocks_spanned,
    evidence_spread,
    memory_partition,
    random_contiguous,
    random_scattered,
    session_partition,
    shape,
)
from langgraph_topics.bench.recall import CATEGORIES, load_conversations
from langgraph_topics.bench.subjects import MemoryBankUser, load_memorybank_users, subject_messages
from langgraph_topics.stores.protocols import Embedder

Progress = Callable[[str], None]
MEMORY = "topic memory"
CONTIGUOUS = "random, contiguous runs"
SCATTERED = "random, scattered"
SESSIONS = "one topic per session"
DAYS = "one topic per day"


@dataclass
class TopicsConfig:
    """What ``bench topics`` runs."""

    data: Path
    """LoCoMo-format JSON file."""
    budgets: list[int]
    memorybank: Path | None = None
    """MemoryBank directory (``*/memory_bank_*.json``) or one history file; None skips it."""
    conversations: list[str] | None = None
    """LoCoMo sample ids to run (all when ``None``)."""
    token_estimate: TokenEstimate = "chars4"
    draws: int = 20
    """Seeded draws of each random partition."""
    seed: int = 0
    embedder: Embedder | None = None
    """The memory's embedder (the product's default when ``None``; tests pass a fake)."""


def import_partition(
    conversation_id: str,
    messages: Sequence[dict[str, Any]],
    budget: int,
    config: TopicsConfig,
    progress: Progress,
) -> tuple[dict[str, str], float]:
    """Import the messages into a fresh memory at ``budget``; returns the partition and seconds."""
    from langgraph_topics.memory import TopicMemory

    work_dir = Path(tempfile.mkdtemp(prefix=f"bench-topics-{conversation_id}-{budget}-"))
    started = time.perf_counter()
    total = len(messages)

    def imported(done: int) -> None:
        if done == total or done % 100 < 2:
            progress(f"{conversation_id} @{budget}: imported {done}/{total}")

    try:
        with TopicMemory(
            data_dir=work_dir,
            budget_tokens=budget,
            token_counter=native_counter(config.token_estimate),
            embedder=config.embedder,
        ) as memory:
            memory.import_messages(THREAD, messages, progress=imported)
            located = memory.services.stores(THREAD).topic_store.message_ids()
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    ids = [str(m["id"]) for m in messages]
    return memory_partition(ids, located), time.perf_counter() - started


def random_partitions(
    ids: Sequence[str], memory: Partition, config: TopicsConfig, label: str
) -> dict[str, list[dict[str, str]]]:
    """``draws`` seeded contiguous and scattered partitions with the memory's block sizes."""
    sizes = block_sizes(memory)
    drawn: dict[str, list[dict[str, str]]] = {CONTIGUOUS: [], SCATTERED: []}
    for draw in range(config.draws):
        rng = random.Random(f"{config.seed}/{label}/{draw}")
        drawn[CONTIGUOUS].append(random_contiguous(ids, sizes, rng))
        drawn[SCATTERED].append(random_scattered(ids, sizes, rng))
    return drawn


def _shape_figures(figures: Shape) -> dict[str, Any]:
    return {
        "messages": figures.messages,
        "topics": figures.topics,
        "unsplit": figures.unsplit,
        "largest": figures.largest,
        "single": figures.single,
        "per_100": round(figures.per_100, 2),
        "largest_share": round(figures.largest_share, 4),
        "single_share": round(figures.single_share, 4),
    }


def _spreads(questions: Sequence[Sequence[str]], partition: Partition) -> list[float]:
    return [s for q in questions if (s := evidence_spread(q, partition)) is not None]


def _mean_of_draws(questions: Sequence[Sequence[str]], draws: Sequence[Partition]) -> list[float]:
    """Per question, the spread averaged over the draws."""
    per_draw = [_spreads(questions, partition) for partition in draws]
    return [fmean(values) for values in zip(*per_draw, strict=True)]


def run_locomo(config: TopicsConfig, progress: Progress) -> dict[str, Any]:
    """Evidence spread and topic shape for every LoCoMo conversation at every budget."""
    conversations = load_conversations(config.data, config.conversations)
    entries: list[dict[str, Any]] = []
    for conversation in conversations:
        ids = [str(m["id"]) for m in conversation.messages]
        questions = [
            q.evidence
            for q in conversation.questions
            if q.category in CATEGORIES and len(q.evidence) >= 2
        ]
        sessions = session_partition(ids)
        entry: dict[str, Any] = {
            "conversation": conversation.sample_id,
            "messages": len(ids),
            "questions": len(questions),
            SESSIONS: {
                **_shape_figures(shape(sessions)),
                "spread": _spreads(questions, sessions),
            },
            "budgets": {},
        }
        for budget in config.budgets:
            partition, seconds = import_partition(
                conversation.sample_id, conversation.messages, budget, config, progress
            )
            drawn = random_partitions(ids, partition, config, f"{conversation.sample_id}/{budget}")
            entry["budgets"][str(budget)] = {
                **_shape_figures(shape(partition)),
                "sizes": block_sizes(partition),
                "spread": {
                    MEMORY: _spreads(questions, partition),
                    CONTIGUOUS: _mean_of_draws(questions, drawn[CONTIGUOUS]),
                    SCATTERED: _mean_of_draws(questions, drawn[SCATTERED]),
                },
                "import_seconds": round(seconds, 1),
            }
        entries.append(entry)
    return {"conversations": entries, "summary": summarise_locomo(entries, config.budgets)}


def _pooled_shape(shapes: Sequence[dict[str, Any]]) -> dict[str, float]:
    messages = sum(s["messages"] for s in shapes)
    topics = sum(s["topics"] for s in shapes)
    return {
        "messages": messages,
        "topics": topics,
        "per_100": round(100 * topics / messages, 2) if messages else 0.0,
        "largest_share": round(fmean(s["largest_share"] for s in shapes), 4) if shapes else 0.0,
        "largest_share_max": max((s["largest_share"] for s in shapes), default=0.0),
        "single_share": round(sum(s["single"] for s in shapes) / topics, 4) if topics else 0.0,
        "unsplit_share": round(sum(s["unsplit"] for s in shapes) / messages, 4)
        if messages
        else 0.0,
    }


def _mean(values: Sequence[float]) -> float | None:
    return round(fmean(values), 4) if values else None


def summarise_locomo(
    entries: Sequence[dict[str, Any]], budgets: Sequence[int]
) -> dict[str, dict[str, Any]]:
    """``summary[budget or "sessions"]`` → spread per partition (pooled over questions), shape."""
    sessions = [e[SESSIONS] for e in entries]
    summary: dict[str, dict[str, Any]] = {
        "sessions": {
            **_pooled_shape(sessions),
            "n": sum(len(s["spread"]) for s in sessions),
            "spread": {SESSIONS: _mean([v for s in sessions for v in s["spread"]])},
        }
    }
    for budget in (str(b) for b in budgets):
        runs = [e["budgets"][budget] for e in entries]
        summary[budget] = {
            **_pooled_shape(runs),
            "n": sum(len(r["spread"][MEMORY]) for r in runs),
            "spread": {
                name: _mean([v for r in runs for v in r["spread"][name]])
                for name in (MEMORY, CONTIGUOUS, SCATTERED)
            },
        }
    return summary


def run_memorybank(path: Path, config: TopicsConfig, progress: Progress) -> dict[str, Any]:
    """Topics per recurring subject for every MemoryBank user (under ``path``) at every budget."""
    users = load_memorybank_users(path)
    entries: list[dict[str, Any]] = []
    for user in users:
        recurring = _recurring(user)
        ids = [str(m["id"]) for m in user.messages]
        days = session_partition(ids)
        entry: dict[str, Any] = {
            "conversation": user.conversation_id,
            "user": user.name,
            "language": user.language,
            "messages": len(ids),
            "subjects": [
                {"subject": name, "exchanges": len(mids) // 2, DAYS: blocks_spanned(mids, days)}
                for name, mids in recurring
            ],
            "budgets": {},
        }
        for budget in config.budgets:
            partition, seconds = import_partition(
                user.conversation_id, user.messages, budget, config, progress
            )
            drawn = random_partitions(ids, partition, config, f"{user.conversation_id}/{budget}")
            entry["budgets"][str(budget)] = {
                **_shape_figures(shape(partition)),
                "topics_per_subject": {
                    MEMORY: [blocks_spanned(mids, partition) for _, mids in recurring],
                    CONTIGUOUS: _draw_means(recurring, drawn[CONTIGUOUS]),
                    SCATTERED: _draw_means(recurring, drawn[SCATTERED]),
                },
                "import_seconds": round(seconds, 1),
            }
        entries.append(entry)
    return {"users": entries, "summary": summarise_memorybank(entries, config.budgets)}


def _recurring(user: MemoryBankUser) -> list[tuple[str, list[str]]]:
    """The user's subjects mentioned on two days or more, with their exchanges' message ids."""
    found: list[tuple[str, list[str]]] = []
    for subject in user.subjects:
        ids, days = subject_messages(user, subject)
        if days >= 2:
            found.append((subject.name, ids))
    return found


def _draw_means(
    recurring: Sequence[tuple[str, list[str]]], draws: Sequence[Partition]
) -> list[float]:
    return [fmean(blocks_spanned(mids, p) for p in draws) for _, mids in recurring]


def summarise_memorybank(
    entries: Sequence[dict[str, Any]], budgets: Sequence[int]
) -> dict[str, dict[str, Any]]:
    """``summary[language][budget]`` → mean topics per recurring subject per partition, shape."""
    summary: dict[str, dict[str, Any]] = {}
    for language in dict.fromkeys(e["language"] for e in entries):
        mine = [e for e in entries if e["language"] == language]
        subjects = [s for e in mine for s in e["subjects"]]
        per_language: dict[str, Any] = {
            "users": len(mine),
            "messages": sum(e["messages"] for e in mine),
            "subjects": len(subjects),
            "exchanges_per_subject": _mean([s["exchanges"] for s in subjects]),
            DAYS: _mean([s[DAYS] for s in subjects]),
        }
        for budget in (str(b) for b in budgets):
            runs = [e["budgets"][budget] for e in mine]
            per_language[budget] = {
                **_pooled_shape(runs),
                "topics_per_subject": {
                    name: _mean([v for r in runs for v in r["topics_per_subject"][name]])
                    for name in (MEMORY, CONTIGUOUS, SCATTERED)
                },
            }
        summary[language] = per_language
    return summary


def run_topics(config: TopicsConfig, progress: Progress) -> dict[str, Any]:
    """Run LoCoMo (and MemoryBank when given); returns the report."""
    started = time.perf_counter()
    report: dict[str, Any] = {
        "config": {
            "data": str(config.data),
            "memorybank": str(config.memorybank) if config.memorybank else None,
            "budgets": config.budgets,
            "conversations": config.conversations,
            "token_estimate": config.token_estimate,
            "draws": config.draws,
            "seed": config.seed,
        },
        "locomo": run_locomo(config, progress),
    }
    report["config"]["conversations"] = [
        e["conversation"] for e in report["locomo"]["conversations"]
    ]
    locomo_seconds = time.perf_counter() - started
    if config.memorybank is not None:
        report["memorybank"] = run_memorybank(config.memorybank, config, progress)
    report["timings"] = {
        "locomo_seconds": round(locomo_seconds, 1),
        "total_seconds": round(time.perf_counter() - started, 1),
    }
    return report
