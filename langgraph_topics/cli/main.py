"""The ``langgraph-topics`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langgraph_topics.bench.cli import add_bench_parser, run_bench
from langgraph_topics.cli.demo import run_demo
from langgraph_topics.cli.tables import clip, render_table

CLI_SETTINGS_FILE = "cli.json"
"""Remembers ``--budget`` per data directory, so later commands see the same window."""


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".langgraph_topics"),
        help="where topics, index and checkpoints live (default ./.langgraph_topics)",
    )
    parser.add_argument("--thread", default="default", help="conversation thread id")
    parser.add_argument(
        "--budget",
        type=int,
        default=None,
        help="main-window token budget (remembered per data directory)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="langgraph-topics", description="Topic-partitioned chat memory."
    )
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


def _budget(args: argparse.Namespace) -> int | None:
    path = Path(args.data_dir) / CLI_SETTINGS_FILE
    if args.budget is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"budget": args.budget}), "utf-8")
        return int(args.budget)
    if path.is_file():
        return int(json.loads(path.read_text("utf-8"))["budget"])
    return None


def _memory(args: argparse.Namespace) -> Any:
    from langgraph_topics.memory import TopicMemory

    return TopicMemory(data_dir=args.data_dir, budget_tokens=_budget(args))


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise SystemExit(f"{path}:{number}: not JSON ({error.msg})") from error
        if not isinstance(record, dict) or record.get("role") not in ("user", "assistant"):
            raise SystemExit(f"{path}:{number}: need an object with role user|assistant")
        records.append(record)
    return records


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
    records = _read_jsonl(args.file)
    memory = _memory(args)

    def progress(done: int) -> None:
        print(f"\rimported {done}/{len(records)}", end="", file=sys.stderr, flush=True)

    added = memory.import_messages(args.thread, records, progress=progress)
    print(file=sys.stderr)
    topics = memory.topics(args.thread)
    print(f"imported {added} messages into {len(topics)} topics")
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
    return handlers[args.command](args)


if __name__ == "__main__":
    raise SystemExit(main())
