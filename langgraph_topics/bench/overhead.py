"""``bench overhead``: the graph's own cost per turn, with every model role answering instantly.

Two sweeps: history length (1,000 / 10,000 / 100,000 messages at the middle topic count) and
topic count (10 / 100 / 1,000 topics at 10,000 messages). Each size runs in a fresh process, so
its peak RSS is its own. Beside the topic graph, in the same process:

- the floor (``bench/floor.py``): the same graph shape doing no work, on the same saver, with
  the same durability and fan-out. The ratio to it is the product's own cost;
- the state-shaped floor (same file): the topic graph's own state schema, nodes and routes,
  doing no work. Over the floor, what LangGraph charges for the topic graph's state (its
  channels, nodes naming their successor, a working set that grows until a split); the rest of
  the ratio is the nodes' work;
- a plain LangGraph chat graph (``messages`` with ``add_messages``, the same SQLite
  checkpointer) holding the whole history, what a memory-less app pays.

After the timed turns, as many again with every node's thread CPU added up (where a turn's
CPU goes), and those turns replayed from their recorded node outputs (``bench/replay.py``:
LangGraph's charge for the real state and updates alone). Then the memory is closed, opened
again in a fresh process, and the first context query timed (cold start).

The topic graph and the two floors take turns (turn *n* of each before turn *n + 1* of any),
so that a ratio compares graphs that met the same machine. Each turn is timed twice: wall
time, and the process's CPU time (every thread of it), which stretches less with other work
on the machine.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import resource
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypedDict, cast

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph.message import add_messages

from langgraph_topics.bench.replay import NodeOutputs, copy_checkpoints
from langgraph_topics.bench.report import simple_table

if TYPE_CHECKING:
    from langgraph_topics.memory import TopicMemory


class ChatState(TypedDict):
    """The plain chat graph's state: the whole history in ``messages``."""

    messages: Annotated[list[AnyMessage], add_messages]


ACTIVE_TOPICS = 10
SEARCH = "evidence search"
"""The breakdown's row for the scorer's calls: every message of the thread scored for the
question (the recall's evidence), inside the nodes that ask for it (the assembler here)."""
BUDGET = 8000
EMBEDDING_DIMENSIONS = 512
"""The default embedder's size, so the index on disk and its search weigh what they would."""


def _p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def checkpoint_bytes(path: Path) -> int:
    """Bytes of checkpoint, metadata and pending-write blobs in a SQLite checkpoint database."""
    with sqlite3.connect(path) as connection:
        row = connection.execute(
            "SELECT (SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0)"
            " FROM checkpoints) + (SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes)"
        ).fetchone()
    return int(row[0])


def directory_bytes(path: Path) -> int:
    """Total size of the files under ``path``."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _timed_turns(turn: Callable[[int], object], turns: int) -> tuple[list[float], list[float]]:
    """Wall seconds and process CPU seconds of each turn."""
    timed = _interleaved_turns({"turn": turn}, turns)
    return timed["turn"]


def _interleaved_turns(
    graphs: Mapping[str, Callable[[int], object]], turns: int
) -> dict[str, tuple[list[float], list[float]]]:
    """Wall and CPU seconds of each turn of each graph, the graphs taking turns.

    Turn *n* of every graph runs before turn *n + 1* of any, each round in another order, so
    that the graphs compared meet the same machine: run one after the other, seconds apart,
    the same graph measured 1.4× and 2.4× its floor on one shared machine.
    """
    timed: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in graphs}
    names = list(graphs)
    for number in range(turns):
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            wall, cpu = timed[name]
            started, used = time.perf_counter(), time.process_time()
            graphs[name](number)
            cpu.append(time.process_time() - used)
            wall.append(time.perf_counter() - started)
    return timed


def _plain_graph(path: Path) -> Any:
    from langgraph.graph import START, StateGraph

    from langgraph_topics.stores.checkpointer import open_sqlite_checkpointer

    def reply(state: ChatState) -> dict[str, Any]:
        return {"messages": [AIMessage("Noted.")]}

    builder = StateGraph(ChatState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    return builder.compile(checkpointer=open_sqlite_checkpointer(path))


def _node_breakdown(
    memory: TopicMemory, turn: Callable[[int], object], turns: int, outputs: NodeOutputs
) -> tuple[dict[str, float], float, float]:
    """Median thread CPU ms per turn: each node's, the turn's beyond its nodes, the search's.

    The evidence search is the scorer's own thread CPU, inside the nodes' that call it.
    Measured on turns of their own, after the timed ones, with the memory's graph rebuilt
    with its nodes wrapped (``graph/node_times.py``): the timed turns run the graph as a user
    does. Medians, turn by turn, as the headline figures are: a full garbage collection
    (90–150 ms in a process that imported chromadb, about one turn in 40) would otherwise
    land, averaged, on whichever part of a turn it interrupted. A node that did not run in a
    turn counts 0 for it. Every node's output is kept in ``outputs``, for the replay.
    """
    from langgraph_topics.bench.replay import BothWrappers
    from langgraph_topics.graph.builder import build_graph
    from langgraph_topics.graph.node_times import NodeTimes

    times = NodeTimes()
    plain_graph = memory.graph
    # Recorded outside the timer: keeping an output is not the node's work.
    memory.graph = build_graph(
        memory.checkpointer, wrap_nodes=BothWrappers(outputs.recorder(), times)
    )
    # The scorer's calls, timed on their own (the recall's per-turn search of the thread).
    scorer = memory.services.scorer
    search_times = NodeTimes()
    setattr(scorer, "score", search_times.wrap(SEARCH, scorer.score))  # noqa: B010
    spent: list[dict[str, float]] = []
    outside: list[float] = []
    searched: list[float] = []
    try:
        for number in range(turns):
            before, used = times.totals(), time.process_time()
            search_before = search_times.totals().get(SEARCH, 0.0)
            turn(number)
            cpu = time.process_time() - used
            nodes = {name: s - before.get(name, 0.0) for name, s in times.totals().items()}
            spent.append(nodes)
            outside.append(cpu - sum(nodes.values()))
            searched.append(search_times.totals().get(SEARCH, 0.0) - search_before)
    finally:
        memory.graph = plain_graph
        delattr(scorer, "score")
    names = {name for nodes in spent for name in nodes}
    per_node = {
        name: round(1000 * statistics.median(nodes.get(name, 0.0) for nodes in spent), 2)
        for name in sorted(names)
    }
    if not outside:
        return per_node, 0.0, 0.0
    return per_node, _median_ms(outside), _median_ms(searched)


def _median_ms(seconds: Sequence[float]) -> float:
    return round(1000 * statistics.median(seconds), 2)


def _replayed_turns(
    memory: TopicMemory,
    database: Path,
    outputs: NodeOutputs,
    inputs: Sequence[HumanMessage],
    floor: Callable[[int], object],
) -> dict[str, tuple[list[float], list[float]]]:
    """The recorded turns again, every node returning its recorded output, beside the floor's.

    The floor's turns are the ratio's denominator, measured beside them. ``database`` holds
    the checkpoints as they were before the recorded turns. Invoked as the memory invokes its
    graph (its ``config``, context and durability), without the memory's wrapper (locks, the
    check for a turn cut short, retention).
    """
    from langgraph_topics.graph.builder import build_graph
    from langgraph_topics.memory import DURABILITY
    from langgraph_topics.services import TopicContext
    from langgraph_topics.stores.checkpointer import open_sqlite_checkpointer

    saver = open_sqlite_checkpointer(database)
    graph = build_graph(saver, wrap_nodes=outputs.player())
    config = memory.run_config("t")
    context = TopicContext(services=memory.services)

    def replayed(number: int) -> None:
        outputs.turn = number
        graph.invoke(
            cast(Any, {"messages": [inputs[number]], "mode": "chat"}),
            config,
            context=context,
            durability=DURABILITY,
        )

    try:
        return _interleaved_turns({"replay": replayed, "floor": floor}, len(inputs))
    finally:
        saver.conn.close()


def _bench_memory(data_dir: Path) -> TopicMemory:
    """The memory ``bench overhead`` measures: zero-latency roles, the hashing embedder."""
    from langgraph_topics.bench.fakes import HashEmbedder, fake_roles
    from langgraph_topics.memory import TopicMemory

    return TopicMemory(
        data_dir=data_dir,
        budget_tokens=BUDGET,
        roles=fake_roles(),
        embedder=HashEmbedder(EMBEDDING_DIMENSIONS),
    )


def cold_start(data_dir: Path, warm_dir: Path) -> tuple[float, float]:
    """Seconds to reopen the memory on ``data_dir``, and to answer thread ``t``'s first query.

    Run in a process of its own, as an application restarted on its data would. The process
    first opens a memory on an empty directory (``warm_dir``) and asks it once, so that
    loading the modules is not timed (an application loads them once, whatever it opens).
    Timed in the process that had built the thread, the reopen also paid for that build's
    garbage: the collector's full pass fell inside it in some runs and not in others (0.15–0.6
    s of a 0.4–1.2 s cold start at 100,000 messages).
    """
    from langgraph_topics.bench.synthetic import message_text

    warm = _bench_memory(warm_dir)
    warm.context("t", message_text(0))
    warm.close()
    gc.collect()
    started = time.perf_counter()
    memory = _bench_memory(data_dir)
    opened_seconds = time.perf_counter() - started
    memory.context("t", message_text(2 * 10**7))
    cold_seconds = time.perf_counter() - started
    # A large index reopened from disk converts its vectors on a thread after the first
    # search: let it finish before the process ends.
    memory.services.stores("t").message_index.widened.wait(timeout=60)
    memory.close()
    return opened_seconds, cold_seconds


def measure_size(history: int, topics: int, turns: int) -> dict[str, Any]:
    """Time ``turns`` chat turns of the topic graph and of a plain chat graph at one size."""
    from langgraph_topics.bench.floor import FloorThread
    from langgraph_topics.bench.synthetic import message_text, seed_thread

    work = Path(tempfile.mkdtemp(prefix="bench-overhead-"))
    active = min(ACTIVE_TOPICS, topics)

    memory = _bench_memory(work / "topics")
    started = time.perf_counter()
    seed_thread(memory, "t", history=history, topics=topics, active=active)
    build_seconds = time.perf_counter() - started
    working = [message_text(n) for n in range(history - 30, history)]
    floor_path = work / "floor.sqlite"
    floor = FloorThread(floor_path, topics=topics, active=active, working=working)
    shaped = FloorThread(
        work / "state-floor.sqlite",
        topics=topics,
        active=active,
        working=working,
        state_shaped=True,
    )
    database = work / "topics" / "checkpoints.sqlite"
    written = checkpoint_bytes(database)
    floor_before = checkpoint_bytes(floor_path)
    timed = _interleaved_turns(
        {
            "topic": lambda n: memory.chat("t", message_text(10**7 + n)),
            "floor": lambda n: floor.turn(message_text(10**7 + n)),
            "state floor": lambda n: shaped.turn(message_text(10**7 + n)),
        },
        turns,
    )
    (topic_seconds, topic_cpu), (floor_seconds, floor_cpu) = timed["topic"], timed["floor"]
    shaped_seconds, shaped_cpu = timed["state floor"]
    topic_written = checkpoint_bytes(database) - written
    floor_written = checkpoint_bytes(floor_path) - floor_before
    # The breakdown's turns are recorded and replayed from the checkpoints as they were before
    # them (the same inputs, ids included, so that the state evolves as recorded).
    replay_database = work / "replay.sqlite"
    copy_checkpoints(database, replay_database)
    outputs = NodeOutputs()
    inputs = [HumanMessage(message_text(2 * 10**7 + n), id=f"replayed-{n}") for n in range(turns)]

    def recorded(number: int) -> None:
        outputs.turn = number
        memory.run_turn("t", {"messages": [inputs[number]], "mode": "chat"})

    node_ms, outside_ms, search_ms = _node_breakdown(memory, recorded, turns, outputs)
    replayed = _replayed_turns(
        memory,
        replay_database,
        outputs,
        inputs,
        lambda n: floor.turn(message_text(3 * 10**7 + n)),
    )
    memory.close()
    size = directory_bytes(work / "topics")
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        opened_seconds, cold_seconds = pool.apply(cold_start, (work / "topics", work / "warm"))

    plain_path = work / "plain.sqlite"
    plain = _plain_graph(plain_path)
    config = {"configurable": {"thread_id": "t"}}
    seeded = [
        (HumanMessage if n % 2 == 0 else AIMessage)(message_text(n), id=f"m{n}")
        for n in range(history)
    ]
    plain.update_state(config, {"messages": seeded}, as_node="reply")
    del seeded
    written = checkpoint_bytes(plain_path)
    plain_seconds, _ = _timed_turns(
        lambda n: plain.invoke({"messages": [HumanMessage(message_text(10**7 + n))]}, config),
        turns,
    )
    plain_written = checkpoint_bytes(plain_path) - written
    # WAL mode: most of the data sits in the -wal file until a checkpoint folds it in.
    plain_size = sum(p.stat().st_size for p in work.glob("plain.sqlite*"))
    # The 100,000-message plain database alone is 1.7 GB: never leave it behind.
    shutil.rmtree(work, ignore_errors=True)
    return {
        "history": history,
        "topics": topics,
        "turns": turns,
        "build_seconds": round(build_seconds, 1),
        "topic_graph": {
            "median_ms": round(1000 * statistics.median(topic_seconds), 1),
            "p95_ms": round(1000 * _p95(topic_seconds), 1),
            "cpu_ms": round(1000 * statistics.median(topic_cpu), 1),
            "checkpoint_bytes_per_turn": topic_written // turns,
            "data_dir_bytes": size,
            "bytes_per_message": size // history,
            "node_cpu_ms": node_ms,
            "outside_nodes_cpu_ms": outside_ms,
            "evidence_search_cpu_ms": search_ms,
            "replay_cpu_ms": round(1000 * statistics.median(replayed["replay"][1]), 1),
            "replay_floor_cpu_ms": round(1000 * statistics.median(replayed["floor"][1]), 1),
            "open_seconds": round(opened_seconds, 3),
            "cold_start_seconds": round(cold_seconds, 3),
        },
        "floor_graph": {
            "median_ms": round(1000 * statistics.median(floor_seconds), 1),
            "p95_ms": round(1000 * _p95(floor_seconds), 1),
            "cpu_ms": round(1000 * statistics.median(floor_cpu), 1),
            "checkpoint_bytes_per_turn": floor_written // turns,
        },
        "state_floor_graph": {
            "median_ms": round(1000 * statistics.median(shaped_seconds), 1),
            "cpu_ms": round(1000 * statistics.median(shaped_cpu), 1),
        },
        "plain_graph": {
            "median_ms": round(1000 * statistics.median(plain_seconds), 1),
            "p95_ms": round(1000 * _p95(plain_seconds), 1),
            "checkpoint_bytes_per_turn": plain_written // turns,
            "data_dir_bytes": plain_size,
        },
        # Linux reports kilobytes; both graphs ran in this process, after the history was built.
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def sizes(history: Sequence[int], topics: Sequence[int]) -> list[tuple[int, int]]:
    """History sweep at the middle topic count, topic sweep at the middle history length."""
    middle_topics = sorted(topics)[len(topics) // 2]
    middle_history = sorted(history)[len(history) // 2]
    pairs = [(h, middle_topics) for h in history] + [(middle_history, t) for t in topics]
    return list(dict.fromkeys((h, min(t, max(1, h - 30))) for h, t in pairs))


def run_overhead(
    history: Sequence[int], topics: Sequence[int], turns: int, progress: Callable[[str], None]
) -> dict[str, Any]:
    """Measure every size in its own process; returns the report."""
    results: list[dict[str, Any]] = []
    context = multiprocessing.get_context("spawn")
    for h, t in sizes(history, topics):
        progress(f"overhead: {h:,} messages, {t:,} topics, {turns} turns")
        # Not a Pool: its workers are daemons, which may not start the cold start's process.
        with ProcessPoolExecutor(1, mp_context=context) as pool:
            results.append(pool.submit(measure_size, h, t, turns).result())
        last = results[-1]
        progress(
            f"  topic graph {last['topic_graph']['median_ms']} ms/turn"
            f" ({last['topic_graph']['cpu_ms']} ms CPU),"
            f" floor {last['floor_graph']['median_ms']} ms/turn"
            f" ({last['floor_graph']['cpu_ms']} ms CPU),"
            f" plain {last['plain_graph']['median_ms']} ms/turn,"
            f" cold start {last['topic_graph']['cold_start_seconds']} s"
        )
    return {
        "active_topics": ACTIVE_TOPICS,
        "budget_tokens": BUDGET,
        "cpus": os.cpu_count(),
        "sizes": results,
    }


def overhead_table(report: dict[str, Any]) -> str:
    """One row per size: the topic graph, the floor and the plain graph, with the ratios."""
    rows = []
    for size in report["sizes"]:
        mine, floor, plain = size["topic_graph"], size["floor_graph"], size["plain_graph"]
        shaped = size["state_floor_graph"]
        rows.append(
            [
                f"{size['history']:,}",
                f"{size['topics']:,}",
                mine["median_ms"],
                mine["p95_ms"],
                floor["median_ms"],
                f"{mine['median_ms'] / max(floor['median_ms'], 1e-9):.2f}",
                mine["cpu_ms"],
                floor["cpu_ms"],
                f"{mine['cpu_ms'] / max(floor['cpu_ms'], 1e-9):.2f}",
                shaped["median_ms"],
                f"{shaped['median_ms'] / max(floor['median_ms'], 1e-9):.2f}",
                plain["median_ms"],
                f"{mine['checkpoint_bytes_per_turn']:,}",
                f"{floor['checkpoint_bytes_per_turn']:,}",
                f"{mine['bytes_per_message']:,}",
                mine["cold_start_seconds"],
                size["peak_rss_mb"],
            ]
        )
    headers = [
        "messages",
        "topics",
        "median ms",
        "p95 ms",
        "floor ms",
        "÷ floor",
        "cpu ms",
        "floor cpu ms",
        "cpu ÷ floor",
        "state floor ms",
        "state ÷ floor",
        "plain chat ms",
        "ckpt B/turn",
        "floor ckpt B/turn",
        "disk B/message",
        "cold start s",
        "peak RSS MB",
    ]
    flat = _flatness(report["sizes"])
    breakdown = node_table(report["sizes"])
    return (
        f"per-turn cost, zero-latency roles, {report['active_topics']} active topics,"
        f" budget {report['budget_tokens']:,}\n"
        + simple_table(headers, rows)
        + (f"\n{flat}" if flat else "")
        + (f"\n\n{breakdown}" if breakdown else "")
    )


NODE_ORDER = (
    "inject_workflow",
    "estimate",
    "split",
    "recall_cue",
    "activate",
    "topic_window",
    "assemble",
    "respond",
    "bookkeeping",
    "end_context",
)


def node_table(sizes: Sequence[dict[str, Any]]) -> str:
    """Where a topic-graph turn's CPU goes: each node's median ms per turn, one column per size.

    The topic windows' row sums the windows of a turn (they run in parallel, so a turn's wall
    time holds less of it); "outside the nodes" is LangGraph's work and the memory's, and over
    the floor's whole turn (CPU) it is the ratio the turn would have if its nodes cost nothing.
    """
    measured = [size for size in sizes if "node_cpu_ms" in size["topic_graph"]]
    if not measured:
        return ""
    seen = {name for size in measured for name in size["topic_graph"]["node_cpu_ms"]}
    names = [name for name in NODE_ORDER if name in seen] + sorted(seen - set(NODE_ORDER))
    rows = [
        [name] + [size["topic_graph"]["node_cpu_ms"].get(name, 0.0) for size in measured]
        for name in names
    ]
    rows.append(
        [f"{SEARCH}, inside the nodes"]
        + [size["topic_graph"].get("evidence_search_cpu_ms", 0.0) for size in measured]
    )
    rows.append(
        ["outside the nodes"] + [size["topic_graph"]["outside_nodes_cpu_ms"] for size in measured]
    )
    # What the turn would cost with nodes that cost nothing: the ratio's reach for the nodes.
    # Then the same with the nodes' recorded outputs replayed: LangGraph's charge for the real
    # state and updates, without the nodes' work or the memory's wrapper (``bench/replay.py``).
    graphs = [(size["topic_graph"], size["floor_graph"]) for size in measured]
    rows.append(
        ["outside ÷ the floor's turn"]
        + [_ratio(topic["outside_nodes_cpu_ms"], floor["cpu_ms"]) for topic, floor in graphs]
    )
    rows.append(
        ["replayed updates ÷ the floor's turn"]
        + [_ratio(topic["replay_cpu_ms"], topic["replay_floor_cpu_ms"]) for topic, _ in graphs]
    )
    headers = ["node"] + [f"{s['history']:,} msgs / {s['topics']:,} topics" for s in measured]
    return (
        "where a topic-graph turn's CPU goes (median thread CPU ms per turn, on turns of their"
        " own)\n" + simple_table(headers, rows)
    )


def _ratio(part: float, whole: float) -> float:
    return round(float(part) / max(float(whole), 1e-9), 2)


def _flatness(sizes: Sequence[dict[str, Any]]) -> str:
    """The longest history's cost over the shortest's, at the same topic count.

    Also in floor units (each size's ratio to its own floor): the sizes run minutes apart, in
    processes of their own, and the floor, which does not grow with the history, takes out
    how the machine's speed moved in between.
    """
    by_topics: dict[int, list[dict[str, Any]]] = {}
    for size in sizes:
        by_topics.setdefault(size["topics"], []).append(size)
    lines = []
    for topics, group in by_topics.items():
        if len(group) < 2:
            continue
        group.sort(key=lambda s: s["history"])
        short, long = group[0], group[-1]
        ratio = long["topic_graph"]["median_ms"] / max(short["topic_graph"]["median_ms"], 1e-9)
        in_floors = _floor_units(long) / max(_floor_units(short), 1e-9)
        lines.append(
            f"{topics:,} topics: {long['history']:,} messages cost {ratio:.2f}×"
            f" {short['history']:,} messages per turn ({in_floors:.2f}× in floor units)"
        )
    return "\n".join(lines)


def _floor_units(size: dict[str, Any]) -> float:
    topic_ms, floor_ms = (
        float(size["topic_graph"]["median_ms"]),
        float(size["floor_graph"]["median_ms"]),
    )
    return topic_ms / max(floor_ms, 1e-9)
