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

With ``models="sim"`` every role is a model on the simulated provider (``sim_provider``,
reached as a user reaches one), every thread (the one asked in too, so that its turns run
topic windows of their own) imported natively first. A third turn joins
each round: ``user`` reads the other threads' quotes only (``Settings.scope_topics`` 0), and
``topics`` also has the topic window read their best topics (the default), which runs beside
the turn's own windows; ``topics ratio`` is its median over ``user``'s.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
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
    models: str = "native"
    """``native`` back ends, or ``sim``: every role a model on the simulated provider."""

    def __post_init__(self) -> None:
        if not self.others or min(self.others) < 1:
            raise ValueError(f"--threads must be counts of at least 1, got {list(self.others)}")
        if self.rounds < 1 or self.messages < 2:
            raise ValueError("--rounds must be at least 1 and --messages at least 2")
        if self.embedder not in ("use", "hash"):
            raise ValueError(f"embedder must be 'use' or 'hash', got {self.embedder!r}")
        if self.models not in ("native", "sim"):
            raise ValueError(f"--models must be 'native' or 'sim', got {self.models!r}")


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


def _memory(path: Path, config: ScopeCostConfig, embedder: Any, *, models: bool = False) -> Any:
    from langgraph_topics import Settings, TopicMemory
    from langgraph_topics.roles.native import native_roles

    changes: dict[str, Any] = {"data_dir": path, "budget_tokens": config.budget}
    if config.scope_threads is not None:
        changes["scope_threads"] = config.scope_threads
    if models:
        from langgraph_topics.bench.sim_provider import CHEAP_MODEL, STRONG_MODEL

        changes |= {
            "strong_model": f"openai:{STRONG_MODEL}",
            "cheap_model": f"openai:{CHEAP_MODEL}",
        }
        return TopicMemory(settings=Settings(**changes), embedder=embedder)
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
        if config.models == "sim":
            # A thread with topics of its own: its turns run topic windows, as a used one does.
            filler.import_messages(THREAD, _other_thread(others, config.messages))
        memory.wait_idle()
        if config.models == "native":
            times = _rounds(memory, config, ("thread", "user"))
            read = min(others, memory.settings.scope_threads)
    if config.models == "sim":
        from langgraph_topics.bench.sim_provider import SimProvider, openai_endpoint

        with SimProvider() as provider, openai_endpoint(provider.url):
            with _memory(path, config, embedder, models=True) as memory:
                times = _rounds(memory, config, ("thread", "user", "topics"), provider.calls)
                read = min(others, memory.settings.scope_threads)
    row = _row(others, read, times)
    progress(
        f"{others} other threads: thread {row['thread_ms']} ms, user {row['user_ms']} ms "
        f"(ratio {row['ratio']})"
        + (f", with topics read {row['topics_ms']} ms" if "topics_ms" in row else "")
    )
    return row


def _rounds(
    memory: Any, config: ScopeCostConfig, kinds: Sequence[str], calls: Sequence[Any] = ()
) -> Timings:
    """Each round asks one question once in each of ``kinds``, the order turning each round.

    ``calls``: the simulated provider's records, to count each turn's topic-window calls.
    """
    people = {scope: memory.user(USER, scope=scope) for scope in ("thread", "user")}
    stored = people["thread"].thread(THREAD)
    times: Timings = {kind: [] for kind in kinds}
    enter = {
        "thread": people["thread"].enter,
        "topics": people["user"].enter,
        "user": people["user"].enter if config.models == "native" else _quotes_only(memory),
    }
    # One unmeasured turn of each: the thread exists and its first-turn costs are paid.
    for round_number in range(-1, config.rounds):
        turn = round_number % len(kinds)
        for kind in [*kinds[turn:], *kinds[:turn]]:
            question = f"How much did the {WORDS[round_number % len(WORDS)]} cost?"
            before = sum(1 for c in calls if c.role == "topic_window")
            measured = _turn(memory, enter[kind], stored, question)
            window_calls = sum(1 for c in calls if c.role == "topic_window") - before
            read_in = len(memory.state(stored)["context"].get("scope_topics", []))
            if round_number >= 0:
                times[kind].append((*measured, window_calls, read_in))
    return times


def _quotes_only(memory: Any) -> Callable[[str, str], Any]:
    """``UserMemory.enter`` with ``Settings.scope_topics`` 0: the other threads' quotes only."""
    from langgraph_topics.scope.recall import recall_from_threads

    settings = replace(memory.settings, scope_topics=0)
    view = _ThreadsWith(memory, settings, replace(memory.services, settings=settings))

    def enter(thread_id: str, text: str) -> Any:
        recent = memory.scope_registry.enter(USER, thread_id)
        return recall_from_threads(view, USER, thread_id, text, recent)

    return enter


@dataclass(frozen=True)
class _ThreadsWith:
    """A memory's threads (``recall.UserThreads``) read with other settings."""

    memory: Any
    settings: Any
    services: Any

    @property
    def scope_registry(self) -> Any:
        return self.memory.scope_registry

    def exists(self, thread_id: str) -> bool:
        return bool(self.memory.exists(thread_id))

    def reading(self, thread_id: str, timeout: float | None = None) -> Any:
        return self.memory.reading(thread_id, timeout)

    def state(self, thread_id: str) -> dict[str, Any]:
        return dict(self.memory.state(thread_id))


def _turn(
    memory: Any, enter: Callable[[str, str], Any], stored: str, question: str
) -> tuple[float, float, float]:
    """``UserMemory.chat``, timed: (wall ms, CPU ms, ms reading the other threads)."""
    wall, cpu = time.perf_counter(), time.process_time()
    quotes = enter(THREAD, question)
    reading = time.perf_counter()
    memory.chat(stored, question, user_id=USER, scope_quotes=quotes)
    done, used = time.perf_counter(), time.process_time()
    return (done - wall) * 1000, (used - cpu) * 1000, (reading - wall) * 1000


Timings = dict[str, list[tuple[float, float, float, int, int]]]
"""Per kind of turn: (wall ms, CPU ms, ms reading the others, topic-window calls, other
threads' topics whose reading entered the window)."""


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
    } | _topics_columns(times, user_ms)


def _topics_columns(times: Timings, user_ms: float) -> dict[str, Any]:
    """The ``topics`` turn's medians beside the ``user`` turn's (models only)."""
    if "topics" not in times:
        return {}
    topics_ms = round(statistics.median(t[0] for t in times["topics"]), 1)
    return {
        "user_window_calls": statistics.mean(t[3] for t in times["user"]),
        "topics_window_calls": statistics.mean(t[3] for t in times["topics"]),
        "topics_read_in": statistics.mean(t[4] for t in times["topics"]),
        "topics_ms": topics_ms,
        "topics_ratio": round(topics_ms / user_ms, 2) if user_ms > 0 else None,
        "topics_cpu_ms": round(statistics.median(t[1] for t in times["topics"]), 1),
    }


def _topics_cells(row: dict[str, Any]) -> list[Any]:
    calls = f"{row['user_window_calls']:.1f} / {row['topics_window_calls']:.1f}"
    return [row["topics_ms"], row["topics_ratio"], row["topics_cpu_ms"], calls]


def scope_cost_table(report: dict[str, Any]) -> str:
    """One line per thread count: medians of both scopes and their ratio."""
    config = report["config"]
    title = (
        f"bench scope: one user, other threads of {config['messages']} messages, "
        f"{config['rounds']} questions in each scope (alternating), budget {config['budget']}, "
        f"embedder {config['embedder']}, {config.get('models', 'native')} back ends; medians"
    )
    topics = any("topics_ms" in row for row in report["rows"])
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
        *(
            ["topics ms", "topics ratio", "topics CPU ms", "window calls user/topics"]
            if topics
            else []
        ),
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
            *(_topics_cells(row) if topics else []),
        ]
        for row in report["rows"]
    ]
    return title + "\n\n" + simple_table(headers, body)
