"""The ``migrate`` subcommand: an embedded data directory to the ``postgres`` profile.

Progress goes to standard error, one line per thread rewritten in place; the table (or the
``--json`` report) goes to standard output. Exit status 1 when a migrated thread fails its
verification, 2 for bad input (including a thread the target holds with other data).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langgraph_topics.cli.remembered import remembered_budget
from langgraph_topics.cli.tables import render_table
from langgraph_topics.cli.user_scope import user_type
from langgraph_topics.errors import InputError
from langgraph_topics.settings import DATA_DIR_ENV, POSTGRES_SCHEMES, POSTGRES_URI_ENV
from langgraph_topics.stores.postgres_profile import StoreUnavailableError

CHECK_FAILED = 1


def _postgres_uri(text: str) -> str:
    """Read ``--to`` (an ``argparse`` type): a ``postgresql://`` URI."""
    if not text.startswith(POSTGRES_SCHEMES):
        raise argparse.ArgumentTypeError(
            "expected a PostgreSQL URI such as postgresql://user:password@host:5432/database"
        )
    return text


def add_migrate_parser(commands: Any, thread_type: Callable[[str], str]) -> None:
    """Register ``migrate``; ``thread_type`` reads a ``--thread`` (a bad id is a usage error)."""
    migrate = commands.add_parser(
        "migrate",
        help="copy an embedded data directory's threads to a PostgreSQL database, or assign "
        "threads to a user (--user)",
        description=(
            "Copy an embedded data directory's threads (checkpoints, topics, indexes) to the "
            "postgres profile, then check each one there. With --user, move threads of the "
            "data directory (or of the database, with LANGGRAPH_TOPICS_STORE=postgres) into "
            "that user's memory scope instead."
        ),
    )
    migrate.add_argument(
        "--from",
        dest="source",
        type=Path,
        metavar="DATA_DIR",
        help="the embedded data directory to copy (its threads are left as they are)",
    )
    migrate.add_argument(
        "--to",
        dest="target",
        type=_postgres_uri,
        metavar="URI",
        help="the target database, postgresql://user:password@host:5432/database",
    )
    migrate.add_argument(
        "--thread",
        dest="threads",
        type=thread_type,
        action="append",
        metavar="THREAD",
        help="a thread to migrate (repeatable; default every thread of DATA_DIR)",
    )
    migrate.add_argument(
        "--chroma-url",
        metavar="URL",
        help="the Chroma server of the target's topic index (default: a directory under "
        "--data-dir)",
    )
    migrate.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help=(
            f"this machine's cache directory for the target (retrieval index; topic index "
            f"without --chroma-url); default ${DATA_DIR_ENV} or ./.langgraph_topics, which "
            "must not be DATA_DIR"
        ),
    )
    migrate.add_argument(
        "--user",
        type=user_type,
        help="assign the --thread threads to this user's memory scope (no --from/--to)",
    )
    migrate.add_argument(
        "--keep-source",
        action="store_true",
        help="with --user: keep the plain threads too (default: deleted once the copy checks)",
    )
    migrate.add_argument("--json", action="store_true", help="print the report as JSON")
    migrate.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also show the full traceback of each failure",
    )


def _cache_dir(args: argparse.Namespace) -> Path:
    if args.data_dir is not None:
        return Path(args.data_dir)
    chosen = Path(os.environ.get(DATA_DIR_ENV) or ".langgraph_topics")
    if chosen.resolve() == Path(args.source).resolve():
        raise InputError(
            f"{chosen}: the target's cache directory defaults to the source data directory; "
            "pass --data-dir (the workers' LANGGRAPH_TOPICS_DATA_DIR)"
        )
    return chosen


class _ProgressLine:
    """One line on standard error per thread, rewritten as its steps advance."""

    def __init__(self, total_threads: int) -> None:
        self.total = total_threads
        self.current: str | None = None
        self.number = 0
        self.rewrite = sys.stderr.isatty()
        """On a terminal the line is redrawn at each step; a log gets one line per thread."""
        self.open = False

    def __call__(self, thread_id: str, step: str, done: int, total: int) -> None:
        if thread_id != self.current:
            self.current = thread_id
            self.number += 1
        if not self.rewrite and step != "done":
            return
        counted = f" {done}/{total}" if step == "checkpoints" else ""
        line = f"migrating {thread_id} ({self.number}/{self.total}): {step}{counted}"
        self.open = step != "done"
        print(
            f"\r\033[K{line}" if self.rewrite else line,
            end="" if self.open else "\n",
            file=sys.stderr,
            flush=True,
        )

    def close(self) -> None:
        """End a line a failure left unfinished."""
        if self.open:
            print(file=sys.stderr, flush=True)


def run_migrate(args: argparse.Namespace) -> int:
    """Run ``migrate``; errors are ``InputError`` lines (exit status 2)."""
    from langgraph_topics.migration import MigrationTarget, list_threads, migrate_data_dir

    if args.user is not None:
        return _run_assign(args)
    if args.source is None or args.target is None:
        raise InputError("migrate needs --from and --to (or --user, to assign threads to a user)")
    if args.keep_source:
        raise InputError("--keep-source goes with --user")
    source = Path(args.source)
    threads = list(dict.fromkeys(args.threads)) if args.threads else list_threads(source)
    target = MigrationTarget(
        postgres_uri=args.target, cache_dir=_cache_dir(args), chroma_url=args.chroma_url
    )
    progress = _ProgressLine(len(threads))
    try:
        report = migrate_data_dir(
            source,
            target,
            threads=threads,
            budget_tokens=remembered_budget(source, None),
            progress=progress,
        )
    except StoreUnavailableError as error:  # it names the variable; here --to gave the URI
        raise InputError(str(error).replace(f"{POSTGRES_URI_ENV}:", "--to:", 1)) from None
    finally:
        progress.close()
    if args.json:
        print(json.dumps(report.as_json(), ensure_ascii=False, indent=2))
        return 0 if report.ok else CHECK_FAILED
    rows = [
        [
            row["thread"],
            f"{row['checkpoints']} ({row['copied_checkpoints']} new)",
            row["topics"],
            row["messages"],
            "ok" if row["check"] else "FAILED",
            "yes" if row["same_context_ids"] else "NO",
        ]
        for row in (thread.as_json() for thread in report.threads)
    ]
    print(
        render_table(
            ["thread", "checkpoints", "topics", "messages", "check", "same context ids"], rows
        )
    )
    for thread in report.threads:
        if thread.verification is not None and not thread.verification.check_ok:
            for finding in thread.verification.findings:
                print(f"- {thread.thread_id}: {finding}")
    failed = [thread.thread_id for thread in report.threads if not thread.ok]
    if failed:
        print(f"\n{len(failed)} of {len(report.threads)} threads failed: {', '.join(failed)}")
        return CHECK_FAILED
    count = len(report.threads)
    threads_text = f"{count} thread" + ("s" if count != 1 else "")
    print(f"\n{threads_text} migrated to {report.target}; every check passed")
    return 0


def _run_assign(args: argparse.Namespace) -> int:
    """``migrate --user U --thread T…``: move plain threads into U's scope."""
    from langgraph_topics.cli.opening import open_memory
    from langgraph_topics.migration.user_scope import assign_threads

    if args.source is not None or args.target is not None:
        raise InputError(
            "migrate --user assigns threads within one data directory or database: "
            "give --data-dir (not --from/--to)"
        )
    if not args.threads:
        raise InputError("migrate --user needs at least one --thread to assign")
    args.data_dir = Path(args.data_dir or os.environ.get(DATA_DIR_ENV) or ".langgraph_topics")
    args.budget = None
    memory = open_memory(args)
    try:
        assigned = assign_threads(memory, args.user, args.threads, keep_source=args.keep_source)
    finally:
        memory.close()
    if args.json:
        print(json.dumps([vars(a) for a in assigned], ensure_ascii=False, indent=2))
        return 0
    rows = [
        [a.thread_id, a.messages, a.checkpoints, "kept" if a.source_kept else "moved"]
        for a in assigned
    ]
    print(render_table(["thread", "messages", "checkpoints", "plain thread"], rows))
    print(f"\n{len(assigned)} threads now in the memory of user {args.user!r}; every check passed")
    return 0
