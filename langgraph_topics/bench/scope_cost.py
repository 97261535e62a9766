"""``bench scope``: what a ``user``-scope turn costs beside a ``thread``-scope turn (issue 40).

One user has ``others`` threads of ``messages`` messages each (imported) and talks in one more
thread. Each measured round sends one question there twice, once in each scope, the order
alternating from round to round (the machine's speed drifts; turns taken side by side see the
same drift). A turn is what ``UserMemory.chat`` does: the registry's record of the turn and,
in ``user`` scope, the reading of the most recently active other threads (at most
``Settings.scope_threads``: past it the cost stops growing), then the turn itself with the
quotes. Wall and process CPU time are medians over the rounds; ``ratio`` is the ``user``
turn's median over the ``thread`` turn's, in the same run. Each thread count runs in its own
data directory, the embedder loaded once for all.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langgraph_topics.bench.report import simple_table

Progress = Callable[[str], None]

USER = "bench-user"
THREAD = "main"
WORDS = [
    "sourdough", "ryokan", "marathon", "tomato", "guitar", "pension", "kayak", "violin",
    "glacier", "espresso", "bonsai", "telescope", "saffron", "lighthouse", "origami", "cello",
]  # fmt: skip


@dataclass(frozen=True)
class ScopeCostConfig:
    """What ``bench scope`` runs."""

    others: Sequence[int] = field(default_factory=lambda: [1, 4, 8, 16])
    """Other threads of the user, one run each."""
    rounds: int = 10
    """Measured questions per thread count (each asked in both scopes)."""
    messages: int = 20
    """Messages in each other thread."""
    budget: int = 4000
    scope_threads: int | None = None
    """``Settings.scope_threads`` (None: the default, or its variable)."""
    embedder: str = "use"
    """``use`` (the package's default embedder) or ``hash`` (instant, meaningless vectors)."""

    def __post_init__(self) -> None:
        if not self.others or min(self.others) < 1:
            raise ValueError(f"--threads must be counts of at least 1, got {list(self.others)}")
        if self.rounds < 1 or self.messages < 2:
            raise ValueError("--rounds must be at least 1 and --messages at least 2")
        if self.embedder not in ("use", "hash"):
            raise ValueError(f"embedder must be 'use' or 'hash', got {self.embedder!r}")


def run_scope_cost(config: ScopeCostConfig, progress: Progress) -> dict[str, Any]:
    """Measure each thread count; the report (``rows``: one per count)."""
    embedder = _embedder(config.embedder)
    rows = []
    started = time.perf_counter()
    for others in config.others:
        with tempfile.TemporaryDirectory(prefix="bench-scope-") as directory:
            rows.append(_run_size(Path(directory), others, config, embedder, progress))
    return {
        "config": {**asdict(config), "others": list(config.others)},
        "rows": rows,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _embedder(name: str) -> Any:
    if name == "hash":
        from langgraph_topics.bench.fakes import HashEmbedder

        return HashEmbedder()
    from langgraph_topics.stores.embeddings import UseEmbedder

    return UseEmbedder()


def _memory(path: Path, config: ScopeCostConfig, embedder: Any) -> Any:
    from langgraph_topics import Settings, TopicMemory
    from langgraph_topics.roles.native import native_roles

    changes: dict[str, Any] = {"data_dir": path, "budget_tokens": config.budget}
    if config.scope_threads is not None:
        changes["scope_threads"] = config.scope_threads
    settings = Settings(**changes)
    return TopicMemory(settings=settings, roles=native_roles(embedder, settings), embedder=embedder)


def _other_thread(index: int, messages: int) -> list[dict[str, str]]:
    """A thread of facts about one word each exchange: some match the questions asked."""
    records = []
    for k in range(messages // 2):
        word = WORDS[(index + k) % len(WORDS)]
        note = f"Note {k} of thread {index}: the {word} costs {k + 3} euros."
        records.append({"role": "user", "content": note})
        records.append({"role": "assistant", "content": f"Noted: the {word} at {k + 3} euros."})
    return records


def _run_size(
    path: Path, others: int, config: ScopeCostConfig, embedder: Any, progress: Progress
) -> dict[str, Any]:
    with _memory(path, config, embedder) as memory:
        filler = memory.user(USER, scope="thread")
        for index in range(others):
            filler.import_messages(f"t{index}", _other_thread(index, config.messages))
        memory.wait_idle()
        people = {scope: memory.user(USER, scope=scope) for scope in ("thread", "user")}
        stored = people["thread"].thread(THREAD)
        times: Timings = {"thread": [], "user": []}
        # One unmeasured turn of each: the thread exists and its first-turn costs are paid.
        for round_number in range(-1, config.rounds):
            order = ("thread", "user") if round_number % 2 else ("user", "thread")
            for scope in order:
                question = f"How much did the {WORDS[round_number % len(WORDS)]} cost?"
                measured = _turn(memory, people[scope], stored, question)
                if round_number >= 0:
                    times[scope].append(measured)
        read = min(others, memory.settings.scope_threads)
    row = _row(others, read, times)
    progress(
        f"{others} other threads: thread {row['thread_ms']} ms, user {row['user_ms']} ms "
        f"(ratio {row['ratio']})"
    )
    return row


def _turn(memory: Any, person: Any, stored: str, question: str) -> tuple[float, float, float]:
    """``UserMemory.chat``, timed: (wall ms, CPU ms, ms reading the other threads)."""
    wall, cpu = time.perf_counter(), time.process_time()
    quotes = person.enter(THREAD, question)
    reading = time.perf_counter()
    memory.chat(stored, question, user_id=USER, scope_quotes=quotes)
    done, used = time.perf_counter(), time.process_time()
    return (done - wall) * 1000, (used - cpu) * 1000, (reading - wall) * 1000


Timings = dict[str, list[tuple[float, float, float]]]


def _row(others: int, read: int, times: Timings) -> dict[str, Any]:
    def median(scope: str, part: int) -> float:
        return round(statistics.median(t[part] for t in times[scope]), 1)

    thread_ms, user_ms = median("thread", 0), median("user", 0)
    thread_cpu, user_cpu = median("thread", 1), median("user", 1)
    return {
        "others": others,
        "read": read,
        "thread_ms": thread_ms,
        "user_ms": user_ms,
        "ratio": round(user_ms / thread_ms, 2) if thread_ms > 0 else None,
        "thread_cpu_ms": thread_cpu,
        "user_cpu_ms": user_cpu,
        "cpu_ratio": round(user_cpu / thread_cpu, 2) if thread_cpu > 0 else None,
        "reading_ms": median("user", 2),
    }


def scope_cost_table(report: dict[str, Any]) -> str:
    """One line per thread count: medians of both scopes and their ratio."""
    config = report["config"]
    title = (
        f"bench scope: one user, other threads of {config['messages']} messages, "
        f"{config['rounds']} questions in each scope (alternating), budget {config['budget']}, "
        f"embedder {config['embedder']}; medians"
    )
    headers = [
        "other threads",
        "read",
        "thread ms",
        "user ms",
        "ratio",
        "thread CPU ms",
        "user CPU ms",
        "CPU ratio",
        "reading others ms",
    ]
    body = [
        [
            row["others"],
            row["read"],
            row["thread_ms"],
            row["user_ms"],
            row["ratio"],
            row["thread_cpu_ms"],
            row["user_cpu_ms"],
            row["cpu_ratio"],
            row["reading_ms"],
        ]
        for row in report["rows"]
    ]
    return title + "\n\n" + simple_table(headers, body)
