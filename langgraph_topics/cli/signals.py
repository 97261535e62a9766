"""The user-signal subcommands: ``pin``, ``unpin`` and ``rate`` a topic (seed 004 §2.3)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from langgraph_topics.cli.tables import print_json

SIGNAL_COMMANDS = ("pin", "unpin", "rate")


def add_signal_parsers(commands: Any, common: Callable[[argparse.ArgumentParser], None]) -> None:
    """Register ``pin``, ``unpin`` and ``rate``; ``common`` adds the shared options."""
    pin = commands.add_parser(
        "pin",
        help="pin a topic (it scores higher and keeps its tier)",
        description="Pin a topic: a user signal that raises its memory score.",
    )
    pin.add_argument("topic_id", metavar="TOPIC_ID", help="the topic (see the topics command)")
    _json_option(pin)
    common(pin)
    unpin = commands.add_parser(
        "unpin", help="take a topic's pin away", description="Take a topic's pin away."
    )
    unpin.add_argument("topic_id", metavar="TOPIC_ID", help="the topic (see the topics command)")
    _json_option(unpin)
    common(unpin)
    rate = commands.add_parser(
        "rate",
        help="rate a topic from 1 to 5 (0 clears the rating)",
        description="Rate a topic from 1 to 5 (0 clears the rating); its score reads N / 5.",
    )
    rate.add_argument("topic_id", metavar="TOPIC_ID", help="the topic (see the topics command)")
    rate.add_argument("rating", metavar="N", help="a whole number from 1 to 5, or 0 to clear")
    _json_option(rate)
    common(rate)


def _json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help="print what was done as JSON (thread, topic, action, memory score, tier)",
    )


def run_signal(args: argparse.Namespace) -> int:
    """Run ``pin``, ``unpin`` or ``rate``; errors are ``InputError`` lines (exit status 2).

    A thread the data directory does not hold is refused before anything is opened.
    """
    from langgraph_topics.cli.opening import open_existing
    from langgraph_topics.scoring import check_rating

    rating = check_rating(args.rating) if args.command == "rate" else None  # before opening
    memory = open_existing(args)
    if args.command == "pin":
        scored, done = memory.pin(args.thread, args.topic_id), "pinned"
    elif args.command == "unpin":
        scored, done = memory.unpin(args.thread, args.topic_id), "unpinned"
    else:
        scored = memory.rate(args.thread, args.topic_id, rating or 0)
        done = f"rated {rating}" if rating else "rating cleared for"
    if args.json:
        shown: dict[str, object] = {
            "thread": args.thread,
            "topic_id": args.topic_id,
            "action": args.command,
        }
        if args.command == "rate":
            shown["rating"] = rating
        print_json({**shown, "memory_score": scored.score, "tier": scored.tier})
        return 0
    print(f"{done} {args.topic_id}: memory score {scored.score:.2f}, tier {scored.tier}")
    return 0
