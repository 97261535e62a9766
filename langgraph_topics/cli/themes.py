"""``themes`` and ``trace``: what a thread keeps coming back to, and how one subject evolved."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langgraph_topics.cli.tables import clip, print_json, render_table

THEMES_SUMMARY = "list the subjects the thread comes back to, the most talked about first"
TRACE_SUMMARY = "trace how the thread discussed something: its timeline, with the messages"
QUOTE_COLUMNS = 70


def add_theme_parsers(commands: Any, common: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add ``themes`` and ``trace`` (``common`` adds --data-dir, --thread, --budget)."""
    themes: argparse.ArgumentParser = commands.add_parser(
        "themes",
        help=THEMES_SUMMARY,
        description=THEMES_SUMMARY[:1].upper() + THEMES_SUMMARY[1:] + ".",
    )
    themes.add_argument("--limit", type=int, default=20, help="at most this many themes (20)")
    themes.add_argument("--json", action="store_true", help="print the themes as JSON")
    common(themes)
    trace: argparse.ArgumentParser = commands.add_parser(
        "trace", help=TRACE_SUMMARY, description=TRACE_SUMMARY[:1].upper() + TRACE_SUMMARY[1:] + "."
    )
    trace.add_argument("query", nargs="+", help="a theme (as `themes` names it) or any words")
    trace.add_argument("--json", action="store_true", help="print the trace as JSON")
    trace.add_argument(
        "--map",
        type=Path,
        metavar="FILE",
        help="also draw the timeline: FILE.mmd (Mermaid), FILE.md, or FILE.png (needs matplotlib)",
    )
    common(trace)


def run_themes(args: argparse.Namespace) -> int:
    """Print the themes (``--json``: a list of records) or say that there is none yet."""
    from langgraph_topics.cli.opening import open_existing
    from langgraph_topics.errors import InputError

    if args.limit <= 0:
        raise InputError(f"--limit must be positive, got {args.limit}")
    with open_existing(args) as memory:
        found = memory.themes(args.thread)[: args.limit]
    if args.json:
        print_json(found)
        return 0
    if not found:
        print("no theme yet: no subject comes back in this thread's history")
        return 0
    rows = [
        [
            clip(theme["phrased"]["name"] if "phrased" in theme else theme["theme"], 30),
            (theme["first"] or "")[:10],
            (theme["last"] or "")[:10],
            theme["units"],
            theme["messages"],
            clip(theme["current"] or "", 20),
            # A phrased name hides the native keyword: the keywords then show it.
            clip(", ".join(theme["keywords"][0 if "phrased" in theme else 1 :]), 30),
        ]
        for theme in found
    ]
    print(render_table(["theme", "first", "last", "units", "messages", "now", "with"], rows))
    print("\n`trace THEME` shows a theme's timeline with its messages")
    return 0


def run_trace(args: argparse.Namespace) -> int:
    """Print the timeline (``--json``: the trace record) or say that nothing matches."""
    from langgraph_topics.cli.opening import open_existing
    from langgraph_topics.viz.theme_timeline import state_label, write_theme_timeline

    query = " ".join(args.query)
    with open_existing(args) as memory:
        found = memory.trace(args.thread, query)
    if found is not None and args.map is not None:
        write_theme_timeline(args.map, found)
    if args.json:
        print_json(found)
        return 0
    if found is None:
        print(f"nothing in the thread matches {query!r}")
        return 0
    how = "" if found["matched_by"] == "theme" else " (found by searching the messages)"
    phrased = found.get("phrased")
    name = f"{phrased['name']} ({found['theme']})" if phrased else found["theme"]
    print(f"theme: {name}{how}; keywords: {', '.join(found['keywords'])}")
    if phrased:
        print(f"summary: {phrased['summary']}")
    if found["states"]:
        print("changes: " + " → ".join(state_label(s) for s in found["states"]))
    rows: list[list[object]] = []
    for entry in found["timeline"]:
        what = [state_label(s) for s in entry["states"]] or [entry["mark"]]
        for number, quote in enumerate(entry["quotes"] or [None]):
            rows.append(
                [
                    (entry["start"] or "")[:16].replace("T", " ") if number == 0 else "",
                    ", ".join(what) if number == 0 else "",
                    clip(", ".join(entry["topic_names"]) or "(not split yet)", 20)
                    if number == 0
                    else "",
                    quote["message_id"] if quote else "",
                    f"{quote['role']}: {clip(quote['text'], QUOTE_COLUMNS)}" if quote else "",
                ]
            )
    print(render_table(["when", "what", "topic", "id", "message"], rows))
    if args.map is not None:
        print(f"\ntimeline drawn: {args.map}")
    print("\n`expand ID` prints a message whole")
    return 0
