"""The ``review``, ``archive``, ``restore`` and ``archived`` subcommands (seed 000 §4.8)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from langgraph_topics.cli.tables import clip, print_json, render_table

REVIEW_COMMANDS = ("review", "archive", "restore", "archived")


def add_review_parsers(commands: Any, common: Callable[[argparse.ArgumentParser], None]) -> None:
    """Register the review subcommands; ``common`` adds the shared options (--thread …)."""
    review = commands.add_parser(
        "review",
        help="review the thread's topics: refresh briefs, merge duplicates, archive dormant ones",
        description="Review the thread's topics: refresh briefs, merge duplicates, archive.",
    )
    when = review.add_mutually_exclusive_group()
    when.add_argument(
        "--now",
        metavar="ISO",
        help="judge as of this date or time (e.g. 2030-01-01); default: the thread's own "
        "clock (its latest message's time, or now while someone is writing in it)",
    )
    when.add_argument(
        "--wall-clock",
        action="store_true",
        help="judge as of now even when the thread's latest message is older "
        "(LANGGRAPH_TOPICS_REVIEW_CLOCK=wall does it for every review)",
    )
    review.add_argument("--json", action="store_true", help="print what the review did as JSON")
    common(review)
    for name, summary in (
        ("archive", "archive one topic now (its messages stay; only explicit requests find it)"),
        ("restore", "bring an archived topic back (dormant: activated again when relevant)"),
    ):
        described = summary[:1].upper() + summary[1:] + "."
        action = commands.add_parser(name, help=summary, description=described)
        action.add_argument("topic_id", metavar="TOPIC_ID", help="the topic's id (see topics)")
        action.add_argument(
            "--json",
            action="store_true",
            help="print what was done as JSON (thread, topic, action, status afterwards)",
        )
        common(action)
    archived = commands.add_parser(
        "archived",
        help="list the archived topics' summaries, month by month",
        description="List the archived topics' summaries, month by month.",
    )
    archived.add_argument("--month", metavar="YYYY-MM", help="only this month (or YYYY: year)")
    archived.add_argument("--json", action="store_true", help="print the summaries as JSON")
    common(archived)


def run_review_command(args: argparse.Namespace) -> int:
    """Run one of :data:`REVIEW_COMMANDS`; errors are ``InputError`` lines (exit status 2).

    A thread the data directory does not hold is refused before anything is opened.
    """
    from langgraph_topics.cli.opening import open_existing

    memory = open_existing(args)
    if args.command == "review":
        # The memory's own clock, as a turn stamps its messages with.
        now = memory.services.clock() if args.wall_clock else args.now
        return _print_review(memory.review(args.thread, now=now), args)
    if args.command == "archived":
        return _print_archived(memory.archived(args.thread, month=args.month), args)
    if args.command == "archive":
        status = memory.archive(args.thread, args.topic_id)
    else:
        status = memory.restore(args.thread, args.topic_id)
    if args.json:
        done = {"thread": args.thread, "topic_id": args.topic_id, "action": args.command}
        print_json({**done, "status": status})
        return 0
    print(f"{args.topic_id}: {status}")
    return 0


def _print_review(record: Any, args: argparse.Namespace) -> int:
    if args.json:
        print_json(record)
        return 0
    print(f"review of thread {args.thread!r} as of {record['at']}")
    for merge in record["merged"]:
        shared = ", ".join(merge["shared_keywords"])
        print(
            f"merged {merge['retired']} into {merge['into']} "
            f"(similarity {merge['similarity']:.2f}; shared {shared})"
        )
    for archived in record["archived"]:
        print(f"archived {archived['topic_id']} under {archived['month']}: {archived['reason']}")
    if record["rebriefed"]:
        print(f"briefs refreshed: {', '.join(record['rebriefed'])}")
    for kept in record.get("kept") or []:
        print(f"kept {kept['topic_id']}: {kept['reason']}")
    if record.get("digested"):
        print(f"days compressed into the cards of: {', '.join(record['digested'])}")
    if not (record["merged"] or record["archived"] or record["rebriefed"]):
        print("nothing to do: no brief changed, no duplicates, nothing to archive")
    return 0


def _print_archived(entries: list[Any], args: argparse.Namespace) -> int:
    if args.json:
        print_json(entries)
        return 0
    rows = [
        [e["month"], e["topic_id"], e["message_count"], clip(e["reason"], 30), clip(e["name"], 40)]
        for e in entries
    ]
    print(render_table(["month", "topic", "messages", "reason", "name"], rows))
    return 0
