"""``search``: where a thread talked about something, its original messages best first."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from langgraph_topics.cli.tables import clip, print_json, render_table
from langgraph_topics.errors import InputError

SUMMARY = "find where the thread talked about something: its messages, best first"
SNIPPET_COLUMNS = 80


def add_search_parser(
    commands: Any, common: Callable[[argparse.ArgumentParser], None]
) -> argparse.ArgumentParser:
    """Add the ``search`` subcommand (``common`` adds --data-dir, --thread, --budget)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "search", help=SUMMARY, description=SUMMARY[:1].upper() + SUMMARY[1:] + "."
    )
    parser.add_argument("query", nargs="+", help="what to look for (any language)")
    parser.add_argument("--limit", type=int, default=10, help="at most this many hits (10)")
    parser.add_argument(
        "--since", metavar="DATE", help="only messages sent on or after (ISO date or time)"
    )
    parser.add_argument(
        "--until", metavar="DATE", help="only messages sent on or before (a date: the whole day)"
    )
    parser.add_argument(
        "--no-related",
        action="store_true",
        help="look for the query's own words only, not the words the thread relates to them",
    )
    parser.add_argument("--json", action="store_true", help="print the hits as JSON")
    common(parser)
    return parser


def run_search(args: argparse.Namespace) -> int:
    """Print the hits (``--json``: a list of records) or say that none was found."""
    from langgraph_topics.cli.opening import open_existing

    # Here, not at the top: the retrieval package loads numpy, which `--help` must not wait for.
    from langgraph_topics.retrieval.dates import date_bound

    since = date_bound("--since", args.since, end_of_day=False)
    until = date_bound("--until", args.until, end_of_day=True)
    if since is not None and until is not None and since > until:
        raise InputError(f"--since {args.since} is after --until {args.until}")
    memory = open_existing(args)
    query = " ".join(args.query)
    expand = not args.no_related
    hits = memory.search(
        args.thread, query, limit=args.limit, since=since, until=until, expand=expand
    )
    if args.json:
        print_json(hits)
        return 0
    if not hits:
        print("no message found")
        return 0
    related = memory.related_terms(args.thread, query) if expand else []
    rows = [
        [
            (hit["timestamp"] or "")[:16].replace("T", " "),
            f"{hit['relevance']:.2f}",
            clip(hit["topic_name"] or "(not split yet)", 24),
            hit["message_id"],
            f"{hit['role']}: {clip(hit['snippet'], SNIPPET_COLUMNS)}",
        ]
        for hit in hits
    ]
    print(render_table(["sent", "relevance", "topic", "id", "message"], rows))
    if related:
        print(f"\nalso looked for (words this thread uses with yours): {', '.join(related)}")
    print("\n`expand ID` prints a message whole")
    return 0
