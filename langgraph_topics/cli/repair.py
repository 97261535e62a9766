"""``langgraph-topics repair``: rebuild threads from topic files, checkpoints and pending lines.

Exit status 0 when every known message was recovered, 1 when some are gone (each named).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from langgraph_topics.cli.existing_data import require_data_dir

SUMMARY = "rebuild threads whose checkpoint database or topic files were damaged or lost"


def add_repair_parser(
    commands: Any, common: Callable[[argparse.ArgumentParser], None]
) -> argparse.ArgumentParser:
    """Add the ``repair`` subcommand (``common`` adds --data-dir, --thread, --budget)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "repair", help=SUMMARY, description=SUMMARY[:1].upper() + SUMMARY[1:] + "."
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    common(parser)
    # No --thread: every thread a damaged or missing database held, or whose checkpoints
    # are gone; a thread named is rebuilt whatever the state of the database.
    parser.set_defaults(thread=None)
    return parser


def run_repair(args: argparse.Namespace, open_memory: Callable[[argparse.Namespace], Any]) -> int:
    """Run ``repair`` and print what was recovered and what is gone."""
    from langgraph_topics.repair import repair_data_dir, repair_summary

    require_data_dir(args.data_dir)
    threads = [args.thread] if args.thread is not None else []
    report = repair_data_dir(args.data_dir, lambda: open_memory(args), threads)
    if args.json:
        shown = {
            "ok": report.ok,
            "database": report.database,
            "kept_in": str(report.kept_in),
            "threads": [
                {
                    "thread_id": thread.thread_id,
                    "recovered": thread.recovered,
                    "from_topic_files": thread.from_topic_files,
                    "from_checkpoints": thread.from_checkpoints,
                    "pending_lines": thread.pending_lines,
                    "gone": thread.gone,
                    "topics": thread.topics,
                }
                for thread in report.threads
            ],
        }
        print(json.dumps(shown, ensure_ascii=False, indent=2))
    else:
        for line in repair_summary(report):
            print(line)
    return 0 if report.ok else 1
