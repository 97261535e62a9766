"""The user-signal subcommands: ``pin``, ``unpin`` and ``rate`` a topic (seed 004 §2.3)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from langgraph_topics.cli.existing_data import require_data_dir

SIGNAL_COMMANDS = ("pin", "unpin", "rate")


def add_signal_parsers(commands: Any, common: Callable[[argparse.ArgumentParser], None]) -> None:
    """Register ``pin``, ``unpin`` and ``rate``; ``common`` adds the shared options."""
    pin = commands.add_parser(
        "pin",
        help="pin a topic (it scores higher and keeps its tier)",
        description="Pin a topic: a user signal that raises its memory score.",
    )
    pin.add_argument("topic_id", metavar="TOPIC_ID", help="the topic (see the topics command)")
    common(pin)
    unpin = commands.add_parser(
        "unpin", help="take a topic's pin away", description="Take a topic's pin away."
    )
    unpin.add_argument("topic_id", metavar="TOPIC_ID", help="the topic (see the topics command)")
    common(unpin)
    rate = commands.add_parser(
        "rate",
        help="rate a topic from 1 to 5 (0 clears the rating)",
        description="Rate a topic from 1 to 5 (0 clears the rating); its score reads N / 5.",
    )
    rate.add_argument("topic_id", metavar="TOPIC_ID", help="the topic (see the topics command)")
    rate.add_argument("rating", metavar="N", help="a whole number from 1 to 5, or 0 to clear")
    common(rate)


def run_signal(args: argparse.Namespace, open_memory: Callable[[argparse.Namespace], Any]) -> int:
    """Run ``pin``, ``unpin`` or ``rate``; errors are ``InputError`` lines (exit status 2)."""
    from langgraph_topics.scoring import check_rating

    rating = check_rating(args.rating) if args.command == "rate" else None  # before opening
    require_data_dir(args.data_dir)
    memory = open_memory(args)
    if args.command == "pin":
        scored, done = memory.pin(args.thread, args.topic_id), "pinned"
    elif args.command == "unpin":
        scored, done = memory.unpin(args.thread, args.topic_id), "unpinned"
    else:
        scored = memory.rate(args.thread, args.topic_id, rating)
        done = f"rated {rating}" if rating else "rating cleared for"
    print(f"{done} {args.topic_id}: memory score {scored.score:.2f}, tier {scored.tier}")
    return 0
