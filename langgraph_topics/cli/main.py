"""The ``langgraph-topics`` command line.

Exit status: 0 done; 1 ``check`` found a broken invariant; 2 a usage or input error (a bad
argument, import file or ``cli.json``), reported as one line on standard error before anything
is written; 3 the thread is busy (another process kept writing it past the lock timeout).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from langgraph_topics.bench.cli import add_bench_parser, run_bench
from langgraph_topics.cli.demo import run_demo
from langgraph_topics.cli.remembered import CLI_SETTINGS_FILE, parse_budget, remembered_budget
from langgraph_topics.cli.tables import clip, render_table
from langgraph_topics.errors import InputError, ThreadBusyError
from langgraph_topics.importing import check_records, read_jsonl
from langgraph_topics.settings import MIN_BUDGET_TOKENS
from langgraph_topics.thread_ids import check_thread_id

__all__ = ["CLI_SETTINGS_FILE", "build_parser", "main"]

PROG = "langgraph-topics"
INPUT_ERROR = 2
BUSY = 3


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (subcommand parsers inherit it)."""

    def error(self, message: str) -> NoReturn:
        self.exit(INPUT_ERROR, f"{self.prog}: error: {_one_line(message)} (see --help)\n")


def _one_line(text: str) -> str:
    """Keep an error on one line (a path or a repr'd value may hold a newline)."""
    return " ".join(str(text).split("\n"))


def _thread(text: str) -> str:
    """Read ``--thread`` (an ``argparse`` type: a bad id is a usage error)."""
    try:
        return check_thread_id(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".langgraph_topics"),
        help="where topics, index and checkpoints live (default ./.langgraph_topics)",
    )
    parser.add_argument("--thread", type=_thread, default="default", help="conversation thread id")
    parser.add_argument(
        "--budget",
        type=parse_budget,
        default=None,
        help=(
            f"main-window token budget, at least {MIN_BUDGET_TOKENS} tokens "
            "(remembered per data directory)"
        ),
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = _Parser(prog=PROG, description="Topic-partitioned chat memory.")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run the scripted offline demo")
    _common(demo)
    demo.set_defaults(data_dir=None)  # a fresh scratch directory unless one is given
    chat = commands.add_parser("chat", help="chat (reads lines from standard input)")
    _common(chat)
    importer = commands.add_parser("import", help="import a JSONL conversation")
    importer.add_argument("file", type=Path)
    _common(importer)
    context = commands.add_parser("context", help="show the main window assembled for TEXT")
    context.add_argument("text")
    context.add_argument("--json", action="store_true")
    _common(context)
    topics = commands.add_parser("topics", help="list the topics")
    topics.add_argument("--json", action="store_true")
    topics.add_argument(
        "--map",
        type=Path,
        metavar="FILE",
        help="also draw the topic hierarchy and timeline (PNG, or Mermaid when FILE is .mmd)",
    )
    _common(topics)
    check = commands.add_parser("check", help="check the invariants (exit 1 when broken)")
    check.add_argument("--json", action="store_true")
    _common(check)
    add_bench_parser(commands)
    return parser


def _memory(args: argparse.Namespace) -> Any:
    from langgraph_topics.memory import TopicMemory

    budget = remembered_budget(args.data_dir, args.budget)
    try:
        return TopicMemory(data_dir=args.data_dir, budget_tokens=budget)
    except ValueError as error:  # a setting from the environment (LANGGRAPH_TOPICS_*)
        raise InputError(f"settings: {error}") from None


def _chat(args: argparse.Namespace) -> int:
    memory = _memory(args)
    interactive = sys.stdin.isatty()
    while True:
        if interactive:
            print("> ", end="", flush=True)
        line = sys.stdin.readline()
        if not line:
            break
        text = line.strip()
        if text:
            print(memory.chat(args.thread, text), flush=True)
    return 0


def _import(args: argparse.Namespace) -> int:
    records = read_jsonl(args.file)
    check_records(records)  # the whole file, before the memory is even opened
    memory = _memory(args)
    shown = False

    def progress(done: int) -> None:
        nonlocal shown
        shown = True
        print(f"\rimported {done}/{len(records)}", end="", file=sys.stderr, flush=True)

    try:
        added = memory.import_messages(args.thread, records, progress=progress)
    finally:
        if shown:  # end the progress line (before an error, too)
            print(file=sys.stderr)
    topics = memory.topics(args.thread)
    already = len(records) - added
    note = f" ({already} already there)" if already else ""
    print(f"imported {added} messages into {len(topics)} topics{note}")
    return 0


def _context(args: argparse.Namespace) -> int:
    memory = _memory(args)
    report = memory.context(args.thread, args.text)
    window = report["context"]
    if args.json:
        print(
            json.dumps(
                {
                    "message_ids": window["message_ids"],
                    "tokens": window["tokens"],
                    "budget": window["budget"],
                    "sections": window["sections"],
                    "topics": [
                        {
                            "id": r["topic_id"],
                            "score": r["relevance_score"],
                            "name": r["name"],
                            "referenced_message_ids": r["referenced_message_ids"],
                        }
                        for r in report["topic_results"]
                    ],
                    "in_window": window["topic_ids"],
                    "trimmed": window["trimmed"],
                    "messages": window["messages"],
                    "referenced_messages": window["referenced_messages"],
                },
                ensure_ascii=False,
                indent=2,
            )
        )
        return 0
    sections = window["sections"]
    print(
        f"{window['tokens']} of {window['budget']} tokens: system {sections['system']}, "
        f"topics {sections['topics']}, unsplit {sections['unsplit']}, recent {sections['recent']}"
    )
    rows = [
        [
            r["topic_id"],
            f"{r['relevance_score']:.2f}",
            len(r["referenced_message_ids"]),
            "yes" if r["topic_id"] in window["topic_ids"] else "no",
            clip(r["name"], 40),
        ]
        for r in report["topic_results"]
    ]
    print(render_table(["topic", "score", "refs", "in window", "name"], rows))
    print(
        f"\n{len(window['message_ids'])} messages in the window;"
        f" {len(window['trimmed'])} pieces trimmed"
    )
    return 0


def _topics(args: argparse.Namespace) -> int:
    memory = _memory(args)
    topics = memory.topics(args.thread)
    if args.map is not None:
        from langgraph_topics.viz.topic_map import write_topic_map

        time_index = memory.services.stores(args.thread).topic_store.time_index()
        written = write_topic_map(args.map, topics, time_index)
        print(f"topic map written to {written}", file=sys.stderr)
    if args.json:
        print(json.dumps(topics, ensure_ascii=False, indent=2))
        return 0
    rows = [
        [
            t["id"],
            t["status"],
            t["message_count"],
            f"{t['scores'][-1]:.2f}" if t["scores"] else "-",
            clip(t["name"], 50),
        ]
        for t in topics
    ]
    print(render_table(["id", "status", "messages", "last score", "name"], rows))
    return 0


def _check(args: argparse.Namespace) -> int:
    report = _memory(args).check(args.thread)
    if args.json:
        print(
            json.dumps(
                {"ok": report.ok, "findings": report.findings, "counts": report.counts},
                ensure_ascii=False,
                indent=2,
            )
        )
    else:
        print("all invariants hold" if report.ok else "INVARIANT BROKEN")
        for finding in report.findings:
            print(f"- {finding}")
        print(", ".join(f"{k} {v}" for k, v in report.counts.items()))
    return 0 if report.ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        return run_demo(args.data_dir, args.thread, args.budget)
    if args.command == "bench":
        return run_bench(args)
    handlers = {
        "chat": _chat,
        "import": _import,
        "context": _context,
        "topics": _topics,
        "check": _check,
    }
    try:
        return handlers[args.command](args)
    except InputError as error:
        print(f"{PROG}: error: {_one_line(str(error))}", file=sys.stderr)
        return INPUT_ERROR
    except ThreadBusyError as error:
        print(f"{PROG}: error: {_one_line(str(error))}", file=sys.stderr)
        return BUSY


if __name__ == "__main__":
    raise SystemExit(main())
