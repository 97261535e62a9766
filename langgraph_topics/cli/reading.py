"""The commands that read a thread: ``context``, ``topics``, ``transcript``, ``expand``, ``check``.

Each refuses a thread (or data directory) that is not there with one line, exit status 2, and
creates nothing (``cli.opening.open_existing``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from langgraph_topics.cli.opening import open_existing
from langgraph_topics.cli.tables import clip, print_json, render_table
from langgraph_topics.cli.topic_tree import link_counts, subtree_messages, tree_order
from langgraph_topics.cli.user_scope import run_user_check, scoped_memory
from langgraph_topics.errors import InputError, first_line


def run_transcript(args: argparse.Namespace) -> int:
    """Print the whole conversation (``--json``: one record a line)."""
    for message in open_existing(args).transcript(args.thread):
        if args.json:
            print(json.dumps(message, ensure_ascii=False))
        else:
            stamp = f"[{message['timestamp']}] " if message.get("timestamp") else ""
            print(f"{stamp}{message['role']}: {message['content']}")
    return 0


def run_expand(args: argparse.Namespace) -> int:
    """Print the messages a card's fact cites (``--json``: one record a line)."""
    for message in open_existing(args).expand(args.thread, list(args.ids)):
        if args.json:
            print(json.dumps(message, ensure_ascii=False))
        else:
            stamp = f"[{message['timestamp']}] " if message.get("timestamp") else ""
            print(f"{stamp}{message['role']} ({message['id']}): {message['content']}")
    return 0


def _model_input(window: Any) -> list[dict[str, Any]]:
    """The messages the main model would receive for an assembled window, as plain records.

    The graph's own responder (what ``chat`` uses with a model) builds them with
    ``chat_messages``; the integrations' ``context_messages`` differs only in passing tool
    exchanges as tool messages.
    """
    from langgraph_topics.roles.llm.responder import chat_messages
    from langgraph_topics.state.messages import text_of

    roles = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}
    # The system prompt, then one model message per window message, in order.
    ids = [None, *(m["id"] for m in window["messages"])]
    ids += [None, None] * len(window.get("searches") or [])  # each call and its reply
    shown: list[dict[str, Any]] = []
    for message, message_id in zip(chat_messages(window), ids, strict=True):
        record: dict[str, Any] = {"role": roles.get(message.type, message.type)}
        if message_id:
            record["id"] = message_id
        if message.name:
            record["name"] = message.name
        record["content"] = text_of(message)
        tool_calls = getattr(message, "tool_calls", None)
        if tool_calls:
            record["tool_calls"] = [dict(call) for call in tool_calls]
        tool_call_id = getattr(message, "tool_call_id", None)
        if tool_call_id:
            record["tool_call_id"] = tool_call_id
        shown.append(record)
    return shown


def _print_prompt(messages: Sequence[dict[str, Any]]) -> None:
    """Each message under a header line naming its role (and id), the text as it is sent."""
    for number, message in enumerate(messages):
        details = [message[key] for key in ("id", "name", "tool_call_id") if key in message]
        header = f"=== {message['role']}" + (f" ({', '.join(details)})" if details else "")
        print(("\n" if number else "") + header + " ===")
        print(message["content"])
        for call in message.get("tool_calls", []):
            print(f"[tool call] {json.dumps(call, ensure_ascii=False)}")


def run_context(args: argparse.Namespace) -> int:
    """Show the main window assembled for ``args.text`` (table, prompt or JSON)."""
    memory = open_existing(args)
    memory.require_checkpoints(args.thread)  # a lost checkpoint database is one line, status 2
    report = scoped_memory(memory, args).context(args.thread, args.text)
    window = report["context"]
    prompt = _model_input(window) if args.show_prompt else None
    if args.json:
        shown: dict[str, Any] = {
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
            "system_prompt": window["system_prompt"],
            "messages": window["messages"],
            "referenced_messages": window["referenced_messages"],
        }
        if prompt is not None:
            shown["prompt"] = prompt
        print_json(shown)
        return 0
    if prompt is not None:
        _print_prompt(prompt)
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
        f" {len(window['trimmed'])} pieces trimmed (--show-prompt prints the window itself)"
    )
    return 0


def run_topics(args: argparse.Namespace) -> int:
    """List the thread's topics as a tree table (``--json``: the summaries)."""
    memory = open_existing(args)
    topics = memory.topics(args.thread)
    if args.map is not None:
        _write_map(args, memory, topics)
    if args.json:
        print_json(topics)
        return 0
    totals = subtree_messages(topics)
    rows = [
        [
            t["id"],
            t["status"],
            totals[t["id"]],
            f"{t['scores'][-1]:.2f}" if t["scores"] else "-",
            f"{t['memory_score']:.2f}" if "memory_score" in t else "-",
            t.get("tier", "-") + (" (pinned)" if t.get("usage", {}).get("pinned") else ""),
            link_counts(t),
            ("  " * (depth - 1) + "└ " if depth else "") + clip(t["name"], 50),
        ]
        for depth, t in tree_order(topics)
    ]
    headers = ["id", "status", "messages", "last score", "memory", "tier", "links", "name"]
    print(render_table(headers, rows))
    return 0


def _write_map(args: argparse.Namespace, memory: Any, topics: Any) -> None:
    from langgraph_topics.viz.topic_map import topic_map_paths, write_topic_map

    time_index = memory.services.stores(args.thread).topic_store.time_index()
    try:
        write_topic_map(args.map, topics, time_index, title=f"thread {args.thread}")
    except ImportError as error:  # matplotlib is an optional dependency
        if not (error.name or "").startswith("matplotlib"):
            raise
        raise InputError(
            f"{args.map}: drawing a PNG needs matplotlib ({first_line(error)}); "
            "pip install matplotlib, or write Mermaid with --map FILE.mmd or FILE.md"
        ) from None
    written = " and ".join(str(path) for path in topic_map_paths(args.map))
    print(f"topic map written to {written}", file=sys.stderr)


def run_check(args: argparse.Namespace) -> int:
    """Check the invariants; exit status 1 when one is broken."""
    if args.thread is None:  # ``--user`` without ``--thread``: the whole user
        from langgraph_topics.cli.opening import open_memory

        return run_user_check(args, open_memory)
    report = open_existing(args).check(args.thread, checkpoint_id=args.checkpoint)
    if args.json:
        print_json({"ok": report.ok, "findings": report.findings, "counts": report.counts})
    else:
        print("all invariants hold" if report.ok else "INVARIANT BROKEN")
        for finding in report.findings:
            print(f"- {finding}")
        print(", ".join(f"{k} {v}" for k, v in report.counts.items()))
    return 0 if report.ok else 1
