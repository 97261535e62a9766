"""The ``bench`` subcommands (recall, overhead, search, fanout, topics, load, cost, soak…)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph_topics.bench.topics import TopicsConfig


def _ints(text: str) -> list[int]:
    try:
        values = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers: {text!r}") from error
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers: {text!r}")
    return values


def _floats(text: str) -> list[float]:
    try:
        return [float(part) for part in text.split(",") if part.strip()]
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers: {text!r}") from error


def _shared(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--out", type=Path, default=Path("bench-out"), help="output directory (default bench-out/)"
    )


def add_bench_parser(commands: Any) -> None:
    """Register ``bench`` and its sub-subcommands on the CLI's subparsers."""
    bench = commands.add_parser(
        "bench",
        help="benchmarks: recall, overhead, search, fanout, topics, agent, server-load, soak, "
        "scope",
    )
    kinds = bench.add_subparsers(dest="bench", required=True)

    recall = kinds.add_parser("recall", help="evidence recall at token budgets (LoCoMo format)")
    recall.add_argument("data", type=Path, help="LoCoMo-format JSON file")
    recall.add_argument("--budget", type=_ints, default=[1000, 2000, 4000, 8000])
    recall.add_argument("--conversations", default=None, help="comma-separated sample ids")
    recall.add_argument("--limit", type=int, default=None, help="questions per conversation")
    recall.add_argument(
        "--token-estimate",
        choices=["chars4", "tokenizer"],
        default="chars4",
        help="chars4 = characters / 4 (the reference figures'), tokenizer = o200k BPE",
    )
    recall.add_argument("--no-native", action="store_true", help="baselines only")
    recall.add_argument("--workers", type=int, default=2, help="processes for the native runs")
    _shared(recall)

    overhead = kinds.add_parser("overhead", help="the graph's own cost per turn")
    overhead.add_argument("--history", type=_ints, default=[1000, 10000, 100000])
    overhead.add_argument("--topics", type=_ints, default=[10, 100, 1000])
    overhead.add_argument("--turns", type=int, default=20, help="measured turns per size")
    _shared(overhead)

    embedders = kinds.add_parser("embedders", help="evidence ranking and cost per embedder")
    embedders.add_argument("data", type=Path, help="LoCoMo-format JSON file")
    embedders.add_argument("--embedders", default="use,e5", help="comma-separated: use, e5")
    embedders.add_argument("--budget", type=_ints, default=[1000, 2000, 4000, 8000])
    embedders.add_argument("--token-estimate", choices=["chars4", "tokenizer"], default="chars4")
    _shared(embedders)

    search = kinds.add_parser("search", help="whole-thread evidence search against history")
    search.add_argument("--history", type=_ints, default=[1000, 10000, 100000])
    search.add_argument(
        "--data",
        type=Path,
        default=None,
        help="LoCoMo-format JSON: also measure TopicMemory.search against BM25 on its questions",
    )
    search.add_argument("--conversations", default=None, help="comma-separated sample ids")
    search.add_argument("--budget", type=int, default=4000, help="the memory's budget (--data)")
    search.add_argument(
        "--thread-messages",
        type=int,
        default=10_000,
        help="TopicMemory.search latency on a thread this long, against the 20 ms target "
        "(default 10,000; 0 skips it)",
    )
    search.add_argument(
        "--queries", type=int, default=100, help="questions timed on that thread (100)"
    )
    _shared(search)

    fanout = kinds.add_parser("fanout", help="turn latency against the number of active topics")
    fanout.add_argument("--topics", type=_ints, default=[1, 5, 10, 20])
    fanout.add_argument("--delay", type=float, default=0.2, help="seconds per topic-window call")
    fanout.add_argument("--turns", type=int, default=5)
    fanout.add_argument(
        "--max-concurrency", type=int, default=None, help="cap LangGraph's parallel tasks"
    )
    _shared(fanout)

    topics = kinds.add_parser(
        "topics", help="topic quality: evidence spread, topic shape, beside baselines"
    )
    topics.add_argument("data", type=Path, help="LoCoMo-format JSON file")
    topics.add_argument(
        "--memorybank",
        type=Path,
        default=None,
        metavar="DIR",
        help="MemoryBank directory (*/memory_bank_*.json) or history file: topics per subject "
        "(with --interleaved: each language's users' days woven into one conversation)",
    )
    topics.add_argument(
        "--interleaved",
        action="store_true",
        help="instead: the conversations' sessions woven round robin into one conversation, "
        "topics scored against each message's source (V-measure, B³) beside chunks of 20 "
        "messages and one topic per message pair",
    )
    topics.add_argument("--budget", type=_ints, default=[2000, 8000])
    topics.add_argument("--conversations", default=None, help="comma-separated sample ids")
    topics.add_argument("--token-estimate", choices=["chars4", "tokenizer"], default="chars4")
    topics.add_argument("--draws", type=int, default=20, help="seeded draws per random baseline")
    topics.add_argument("--seed", type=int, default=0, help="seed of the random baselines")
    _shared(topics)

    agent = kinds.add_parser(
        "agent",
        help="create_agent with topic memory, SummarizationMiddleware and none, in one run",
    )
    agent.add_argument("--turns", type=int, default=300, help="user turns (default 300)")
    agent.add_argument("--tool-every", type=int, default=7, help="a tool call every Nth turn")
    agent.add_argument("--budget", type=int, default=2000, help="tokens per whole request")
    agent.add_argument(
        "--system-tokens", type=int, default=1431, help="the agent's system prompt, in tokens"
    )
    agent.add_argument(
        "--messages",
        type=int,
        default=10_000,
        metavar="N",
        help="then the long thread: N messages of history, then --tail-turns agent turns "
        "(default 10000; 0: none)",
    )
    agent.add_argument(
        "--tail-turns", type=int, default=30, help="the long thread's agent turns (default 30)"
    )
    agent.add_argument(
        "--embedder",
        choices=["use", "hash"],
        default="use",
        help="use = the package's default embedder, hash = instant meaningless vectors",
    )
    agent.add_argument(
        "--keep-recent", type=int, default=None, help="the memory's keep_recent (default 20)"
    )
    _shared(agent)

    load = kinds.add_parser(
        "server-load", help="concurrent threads through langgraph dev; every message checked"
    )
    load.add_argument("--threads", type=int, default=10, help="threads chatting at once")
    load.add_argument("--turns", type=int, default=100, help="turns per thread")
    load.add_argument(
        "--timeout", type=float, default=1800.0, help="seconds for sending turns (default 1800)"
    )
    load.add_argument(
        "--run-timeout", type=float, default=300.0, help="seconds one turn may take (default 300)"
    )
    load.add_argument("--budget", type=int, default=None, help="the server's token budget")
    load.add_argument("--config", type=Path, default=None, help="langgraph.json to serve")
    load.add_argument(
        "--postgres-uri",
        default=None,
        metavar="URI",
        help="keep the topics in this PostgreSQL database (LANGGRAPH_TOPICS_STORE=postgres) "
        "instead of the server's platform store; the check reads them from there",
    )
    _shared(load)

    cost = kinds.add_parser(
        "cost", help="one chat turn with every role on a model: calls, tokens, latency, price"
    )
    cost.add_argument("data", type=Path, help="LoCoMo-format JSON file (the dev conversations)")
    cost.add_argument(
        "--history", type=_sizes, default=[24_000], help="history sizes, e.g. 24k,100k,1m"
    )
    cost.add_argument("--budget", type=_ints, default=[4000], help="token budgets, e.g. 4000,8000")
    cost.add_argument("--turns", type=int, default=24, help="measured turns per case")
    cost.add_argument("--warmup", type=int, default=3, help="turns before the measured ones")
    cost.add_argument(
        "--time-scale", type=float, default=1.0, help="multiplies the simulated latency's sleeps"
    )
    cost.add_argument(
        "--strong-latency",
        type=_floats,
        default=[0.7, 60.0, 0.05],
        metavar="S,TOK/S,MS",
        help="strong model: seconds, output tokens/s, ms per input token (0.7,60,0.05)",
    )
    cost.add_argument(
        "--cheap-latency",
        type=_floats,
        default=[0.35, 150.0, 0.02],
        metavar="S,TOK/S,MS",
        help="cheap model: seconds, output tokens/s, ms per input token (0.35,150,0.02)",
    )
    cost.add_argument(
        "--cache",
        type=_ints,
        default=[1024, 128],
        metavar="MIN,BLOCK",
        help="prefix cache: first cached tokens, then blocks of (1024,128)",
    )
    cost.add_argument(
        "--reads",
        type=int,
        default=None,
        metavar="N",
        help="topics a model reads per turn (Settings.topic_window_reads; default: its default)",
    )
    cost.add_argument(
        "--no-native-quotes",
        action="store_true",
        help="topics no model reads get a score only (Settings.topic_window_native_quotes=False)",
    )
    cost.add_argument(
        "--summaries",
        action="store_true",
        help="topic windows write a summary and a card beside their references "
        "(Settings.topic_window_summaries)",
    )
    _shared(cost)

    soak = kinds.add_parser(
        "soak", help="many native chat turns on one thread: RSS, median turn, disk per message"
    )
    soak.add_argument("--turns", type=int, default=10_000, help="user turns (default 10000)")
    soak.add_argument(
        "--reference",
        type=int,
        default=1000,
        help="the turn the last is compared with (default 1000; at most half of --turns)",
    )
    soak.add_argument("--window", type=int, default=100, help="turns per median (default 100)")
    soak.add_argument("--seed", type=int, default=0, help="seed of the user lines")
    soak.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="keep the thread in this new directory (default: a temporary one, deleted)",
    )
    _shared(soak)

    history_cost = kinds.add_parser(
        "history-cost",
        help="one LoCoMo conversation imported with the history layer off and on (issue 38)",
    )
    history_cost.add_argument("data", type=Path, help="LoCoMo-format JSON file")
    history_cost.add_argument(
        "--conversation", default=None, help="its sample id (default: the file's first)"
    )
    history_cost.add_argument(
        "--messages", type=int, default=None, help="import only its first N messages"
    )
    history_cost.add_argument("--repeats", type=int, default=3, help="runs of each (default 3)")
    history_cost.add_argument("--budget", type=int, default=4000, help="the memory's budget")
    _shared(history_cost)

    scope = kinds.add_parser(
        "scope", help="a user-scope turn beside a thread-scope turn, by the user's thread count"
    )
    scope.add_argument(
        "--threads", type=_ints, default=[1, 4, 8, 16], help="the user's other threads"
    )
    scope.add_argument("--rounds", type=int, default=10, help="questions asked in each scope")
    scope.add_argument("--messages", type=int, default=20, help="messages in each other thread")
    scope.add_argument("--budget", type=int, default=4000, help="the memory's budget")
    scope.add_argument(
        "--scope-threads", type=int, default=None, help="Settings.scope_threads (default 8)"
    )
    scope.add_argument("--embedder", choices=["use", "hash"], default="use")
    scope.add_argument(
        "--models",
        choices=["native", "sim"],
        default="native",
        help="native back ends, or every role a model on the simulated provider (adds the "
        "turn whose topic window reads the other threads' topics)",
    )
    _shared(scope)


def _sizes(text: str) -> list[int]:
    from langgraph_topics.bench.cost import parse_size

    try:
        return [parse_size(part) for part in text.split(",") if part.strip()]
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected sizes such as 24k,100k,1m: {text!r}") from error


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _write(out: Path, name: str, report: dict[str, Any]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    path.write_text(json.dumps(report, ensure_ascii=False, indent=1), "utf-8")
    return path


def run_bench(args: argparse.Namespace) -> int:
    """Run the chosen benchmark; prints a table (or JSON) and writes its files under ``--out``."""
    if args.bench == "recall":
        from langgraph_topics.bench.recall import RecallConfig, run_recall
        from langgraph_topics.bench.report import plot_recall, recall_tables

        if not args.data.is_file():
            raise SystemExit(f"no such data file: {args.data}")
        config = RecallConfig(
            data=args.data,
            budgets=args.budget,
            conversations=args.conversations.split(",") if args.conversations else None,
            limit=args.limit,
            token_estimate=args.token_estimate,
            native=not args.no_native,
            workers=args.workers,
        )
        report = run_recall(config, _stderr)
        path = _write(args.out, "recall.json", report)
        plot = plot_recall(report, args.out / "recall.png")
        _emit(args, {k: v for k, v in report.items() if k != "rows"}, recall_tables(report))
        _stderr(f"wrote {path} and {plot} in {report['timings']['total_seconds']} s")
        return 0
    if args.bench == "overhead":
        from langgraph_topics.bench.overhead import overhead_table, run_overhead

        report = run_overhead(args.history, args.topics, args.turns, _stderr)
        path = _write(args.out, "overhead.json", report)
        _emit(args, report, overhead_table(report))
        _stderr(f"wrote {path}")
        return 0
    if args.bench == "embedders":
        from langgraph_topics.bench.embedders import embedders_table, run_embedders

        if not args.data.is_file():
            raise SystemExit(f"no such data file: {args.data}")
        report = run_embedders(
            args.data, args.embedders.split(","), args.budget, args.token_estimate, _stderr
        )
        path = _write(args.out, "embedders.json", report)
        _emit(args, report, embedders_table(report))
        _stderr(f"wrote {path}")
        return 0
    if args.bench == "search":
        from langgraph_topics.bench.search import run_search, search_table

        report = run_search(args.history, _stderr)
        table = search_table(report)
        if args.thread_messages > 0:
            from langgraph_topics.bench.search_latency import (
                run_search_latency,
                search_latency_table,
            )

            report["thread"] = run_search_latency(
                args.thread_messages, max(1, args.queries), _stderr
            )
            table += "\n\n" + search_latency_table(report["thread"])
        if args.data is not None:
            from langgraph_topics.bench.search_quality import (
                run_search_quality,
                search_quality_table,
            )

            if not args.data.is_file():
                raise SystemExit(f"no such data file: {args.data}")
            wanted = args.conversations.split(",") if args.conversations else None
            report["dev"] = run_search_quality(args.data, wanted, args.budget, _stderr)
            table += "\n\n" + search_quality_table(report["dev"])
        path = _write(args.out, "search.json", report)
        _emit(args, report, table)
        _stderr(f"wrote {path}")
        return 0
    if args.bench == "agent":
        return _agent(args)
    if args.bench == "server-load":
        return _server_load(args)
    if args.bench == "topics":
        return _topics(args)
    if args.bench == "cost":
        return _cost(args)
    if args.bench == "soak":
        return _soak(args)
    if args.bench == "history-cost":
        return _history_cost(args)
    if args.bench == "scope":
        return _scope(args)
    from langgraph_topics.bench.fanout import fanout_table, run_fanout

    report = run_fanout(
        args.topics, args.delay, args.turns, _stderr, max_concurrency=args.max_concurrency
    )
    path = _write(args.out, "fanout.json", report)
    _emit(args, report, fanout_table(report))
    _stderr(f"wrote {path}")
    return 0


def _scope(args: argparse.Namespace) -> int:
    from langgraph_topics.bench.scope_cost import ScopeCostConfig, run_scope_cost, scope_cost_table

    try:
        config = ScopeCostConfig(
            others=args.threads,
            rounds=args.rounds,
            messages=args.messages,
            budget=args.budget,
            scope_threads=args.scope_threads,
            embedder=args.embedder,
            models=args.models,
        )
    except ValueError as error:
        raise SystemExit(f"bench scope: {error}") from None
    report = run_scope_cost(config, _stderr)
    path = _write(args.out, "scope.json", report)
    _emit(args, report, scope_cost_table(report))
    _stderr(f"wrote {path} in {report['seconds']} s")
    return 0


def _history_cost(args: argparse.Namespace) -> int:
    from langgraph_topics.bench.history_cost import history_cost_table, run_history_cost

    if not args.data.is_file():
        raise SystemExit(f"no such data file: {args.data}")
    if args.repeats <= 0 or (args.messages is not None and args.messages <= 0):
        raise SystemExit("--repeats and --messages must be positive")
    report = run_history_cost(
        args.data, args.conversation, args.messages, args.repeats, args.budget, _stderr
    )
    path = _write(args.out, "history-cost.json", report)
    _emit(args, report, history_cost_table(report))
    _stderr(f"wrote {path}")
    return 0


def _agent(args: argparse.Namespace) -> int:
    from langgraph_topics.bench.agent import AgentBenchConfig, agent_table, run_agent_bench

    try:
        config = AgentBenchConfig(
            turns=args.turns,
            tool_every=args.tool_every,
            budget=args.budget,
            system_tokens=args.system_tokens,
            messages=args.messages or None,
            tail_turns=args.tail_turns,
            embedder=args.embedder,
            keep_recent=args.keep_recent,
        )
    except ValueError as error:
        raise SystemExit(f"bench agent: {error}") from None
    report = run_agent_bench(config, _stderr)
    path = _write(args.out, "agent.json", report)
    _emit(args, report, agent_table(report))
    _stderr(f"wrote {path}")
    return 0


def _topics(args: argparse.Namespace) -> int:
    from langgraph_topics.bench.topics import TopicsConfig, run_topics
    from langgraph_topics.bench.topics_report import plot_topics, topics_tables

    if not args.data.is_file():
        raise SystemExit(f"no such data file: {args.data}")
    if args.memorybank is not None and not args.memorybank.exists():
        raise SystemExit(f"no such MemoryBank directory or file: {args.memorybank}")
    if args.draws <= 0:
        raise SystemExit(f"--draws must be positive: {args.draws}")
    config = TopicsConfig(
        data=args.data,
        budgets=args.budget,
        memorybank=args.memorybank,
        conversations=args.conversations.split(",") if args.conversations else None,
        token_estimate=args.token_estimate,
        draws=args.draws,
        seed=args.seed,
    )
    if args.interleaved:
        return _interleaved(args, config)
    report = run_topics(config, _stderr)
    path = _write(args.out, "topics.json", report)
    plot = plot_topics(report, args.out / "topics.png")
    _emit(args, report, topics_tables(report))
    _stderr(f"wrote {path} and {plot} in {report['timings']['total_seconds']} s")
    return 0


def _interleaved(args: argparse.Namespace, config: TopicsConfig) -> int:
    from langgraph_topics.bench.interleaved import run_interleaved
    from langgraph_topics.bench.interleaved_report import interleaved_table

    report = run_interleaved(config, _stderr)
    path = _write(args.out, "topics-interleaved.json", report)
    _emit(args, report, interleaved_table(report))
    _stderr(f"wrote {path} in {report['timings']['total_seconds']} s")
    return 0


def _cost(args: argparse.Namespace) -> int:
    from langgraph_topics.bench.cost import CostConfig, run_cost
    from langgraph_topics.bench.cost_report import cost_table
    from langgraph_topics.bench.sim_provider import CacheModel, Latency, SimConfig

    if not args.data.is_file():
        raise SystemExit(f"no such data file: {args.data}")
    if args.turns <= 0 or args.warmup < 0 or args.time_scale < 0:
        raise SystemExit("--turns must be positive, --warmup and --time-scale not negative")
    if args.reads is not None and args.reads < 0:
        raise SystemExit("--reads must not be negative")
    if len(args.strong_latency) != 3 or len(args.cheap_latency) != 3 or len(args.cache) != 2:
        raise SystemExit("--strong-latency/--cheap-latency take 3 numbers, --cache 2")
    if args.strong_latency[1] <= 0 or args.cheap_latency[1] <= 0:
        raise SystemExit("output tokens/s must be positive")
    sim = SimConfig(
        strong=Latency(*args.strong_latency),
        cheap=Latency(*args.cheap_latency),
        cache=CacheModel(*args.cache),
        time_scale=args.time_scale,
    )
    config = CostConfig(
        data=args.data,
        histories=args.history,
        budgets=args.budget,
        turns=args.turns,
        warmup=args.warmup,
        sim=sim,
        summaries=args.summaries,
        reads=args.reads,
        native_quotes=not args.no_native_quotes,
    )
    report = run_cost(config, _stderr)
    path = _write(args.out, "cost.json", report)
    _emit(args, report, cost_table(report))
    _stderr(f"wrote {path} in {report['seconds']} s")
    return 0


def _soak(args: argparse.Namespace) -> int:
    from langgraph_topics.bench.soak import SoakConfig, run_soak, soak_table

    if args.data_dir is not None and args.data_dir.exists() and any(args.data_dir.iterdir()):
        raise SystemExit(f"--data-dir must be a new or empty directory: {args.data_dir}")
    try:
        config = SoakConfig(
            turns=args.turns,
            reference=args.reference,
            window=args.window,
            seed=args.seed,
            data_dir=args.data_dir,
        )
    except ValueError as error:
        raise SystemExit(f"bench soak: {error}") from None
    report = run_soak(config, _stderr)
    path = _write(args.out, "soak.json", report)
    _emit(args, report, soak_table(report))
    _stderr(f"wrote {path}")
    return 0 if report["check_ok"] else 1


def _server_load(args: argparse.Namespace) -> int:
    from langgraph_topics.bench.dev_server import ServerStartError
    from langgraph_topics.bench.server_load import (
        LoadConfig,
        misplaced_items,
        run_server_load,
        server_load_table,
    )
    from langgraph_topics.errors import InputError

    if args.config is not None and not args.config.is_file():
        raise SystemExit(f"no such config file: {args.config}")
    try:
        config = LoadConfig(
            threads=args.threads,
            turns=args.turns,
            timeout=args.timeout,
            run_timeout=args.run_timeout,
            budget=args.budget,
            config=args.config,
            postgres_uri=args.postgres_uri,
        )
    except ValueError as error:
        raise SystemExit(str(error)) from None
    try:
        report = run_server_load(config, _stderr)
    except (ServerStartError, InputError) as error:  # InputError: the database is unreachable
        raise SystemExit(f"server-load: {str(error).splitlines()[0]}") from None
    path = _write(args.out, "server-load.json", report)
    _emit(args, report, server_load_table(report))
    _stderr(f"wrote {path}")
    healthy = not (
        report["lost"]
        or report["duplicated"]
        or report["failed"]
        or report["timed_out"]
        or report["unaccounted"]
        or misplaced_items(report)
    )
    return 0 if healthy else 1


def _emit(args: argparse.Namespace, report: dict[str, Any], table: str) -> None:
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
    else:
        print(table)
