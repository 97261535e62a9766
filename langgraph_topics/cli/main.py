"""The ``langgraph-topics`` command line.

Exit status: 0 done; 1 ``check`` found a broken invariant (or ``repair`` could not recover
every message); 2 a usage or input error (a bad argument, import file, ``--data-dir``,
``cli.json`` or model setting, an unknown provider, a missing API key), reported as one line on
standard error before anything is written, or a store fault (a full disk, a read-only or
damaged store: one line naming the file, ``cli.store_errors``); 3 the
thread is busy (another process kept writing it past the lock timeout); 130 interrupted
(Ctrl-C). Standard output closed early (``| head``) is one line too ("output closed early")
with status 2. A failing model provider is one warning line per failed call (``--verbose``
shows retries and tracebacks). ``--help`` shows each command's examples (``cli.help_texts``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from langgraph_topics.bench.cli import add_bench_parser, run_bench
from langgraph_topics.cli.chat import run_chat
from langgraph_topics.cli.demo import run_demo
from langgraph_topics.cli.existing_data import require_data_dir
from langgraph_topics.cli.help_texts import EXAMPLES, PROG
from langgraph_topics.cli.logs import cli_logging
from langgraph_topics.cli.migrate import add_migrate_parser, run_migrate
from langgraph_topics.cli.remembered import CLI_SETTINGS_FILE, parse_budget, remembered_budget
from langgraph_topics.cli.repair import add_repair_parser, run_repair
from langgraph_topics.cli.review import REVIEW_COMMANDS, add_review_parsers, run_review_command
from langgraph_topics.cli.signals import SIGNAL_COMMANDS, add_signal_parsers, run_signal
from langgraph_topics.cli.store_errors import store_fault_of
from langgraph_topics.cli.tables import clip, render_table
from langgraph_topics.cli.topic_tree import subtree_messages, tree_order
from langgraph_topics.cli.workflow import add_workflow_parser, run_workflow
from langgraph_topics.errors import InputError, ThreadBusyError, first_line
from langgraph_topics.importing import check_records, read_jsonl
from langgraph_topics.message_texts import text_problem
from langgraph_topics.settings import MIN_BUDGET_TOKENS
from langgraph_topics.thread_ids import check_thread_id

__all__ = ["CLI_SETTINGS_FILE", "build_parser", "main"]

INPUT_ERROR = 2
BUSY = 3
INTERRUPTED = 130
CLOSED_PIPE = INPUT_ERROR
"""A reader that went away (``| head``): one line and the status of every other stop."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (subcommand parsers inherit it).

    A parser whose ``prog`` has examples in :data:`EXAMPLES` shows them after its options,
    laid out as written.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.epilog is None and self.prog in EXAMPLES:
            self.epilog = EXAMPLES[self.prog].strip("\n")
            self.formatter_class = argparse.RawDescriptionHelpFormatter

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


def _message_text(text: str) -> str:
    """Read a message text argument (bytes that were not UTF-8 are a usage error)."""
    problem = text_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


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
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also show model retries and the full traceback of each failure",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = _Parser(
        prog=PROG,
        description=(
            "Topic-partitioned chat memory: a conversation is split into topics, the active\n"
            "ones are read in parallel every turn, and the main model gets their results\n"
            "within a token budget."
        ),
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str) -> argparse.ArgumentParser:
        made: argparse.ArgumentParser = commands.add_parser(
            name, help=summary, description=summary[:1].upper() + summary[1:] + "."
        )
        return made

    demo = command("demo", "run the scripted offline demo")
    _common(demo)
    demo.set_defaults(data_dir=None)  # a fresh scratch directory unless one is given
    chat = command("chat", "chat with the memory (reads lines from standard input)")
    _common(chat)
    importer = command("import", "import a recorded conversation (JSONL) into a thread")
    importer.add_argument("file", type=Path, help="JSONL file, one message a line")
    _common(importer)
    context = command("context", "show the main window assembled for TEXT, changing nothing")
    context.add_argument(
        "text", type=_message_text, help="the user message to assemble the window for"
    )
    context.add_argument(
        "--show-prompt",
        action="store_true",
        help="print the messages the main model would receive (system prompt, then the chat)",
    )
    context.add_argument(
        "--json", action="store_true", help="print the window as JSON (system prompt included)"
    )
    _common(context)
    topics = command("topics", "list the thread's topics")
    topics.add_argument("--json", action="store_true", help="print the topics as JSON")
    topics.add_argument(
        "--map",
        type=Path,
        metavar="FILE",
        help=(
            "also draw the topic tree and timeline: FILE.png (needs matplotlib), FILE.mmd "
            "(Mermaid: FILE.mmd and FILE.timeline.mmd) or FILE.md (both diagrams in one page)"
        ),
    )
    _common(topics)
    transcript = command("transcript", "print the whole conversation, oldest first")
    transcript.add_argument(
        "--json", action="store_true", help="one JSON record a line (id, role, content, timestamp)"
    )
    _common(transcript)
    expand = command("expand", "print the original messages a summary card's fact cites")
    expand.add_argument("ids", nargs="+", metavar="ID", help="message ids (a fact's message_ids)")
    expand.add_argument(
        "--json", action="store_true", help="one JSON record a line (id, role, content, timestamp)"
    )
    _common(expand)
    check = command("check", "check the invariants (exit status 1 when one is broken)")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.add_argument(
        "--checkpoint",
        metavar="ID",
        help="check the branch of this checkpoint (a fork, as Studio shows it); default newest",
    )
    _common(check)
    add_signal_parsers(commands, _common)
    add_review_parsers(commands, _common)
    add_workflow_parser(commands, _common)
    add_migrate_parser(commands, _thread)
    add_repair_parser(commands, _common)
    add_bench_parser(commands)
    return parser


def _check_data_dir(path: Path) -> None:
    """Refuse a ``--data-dir`` that is not a directory, before anything is written."""
    if path.exists() and not path.is_dir():
        raise InputError(f"{path}: --data-dir is not a directory")
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise InputError(f"{path}: --data-dir is inside {parent}, which is not a directory")


def _memory(args: argparse.Namespace) -> Any:
    from langgraph_topics.memory import TopicMemory

    _check_data_dir(args.data_dir)
    budget = remembered_budget(args.data_dir, args.budget)
    try:
        return TopicMemory(data_dir=args.data_dir, budget_tokens=budget)
    except InputError:  # already names its setting (a model string…)
        raise
    except ValueError as error:  # a setting from the environment (LANGGRAPH_TOPICS_*)
        raise InputError(f"settings: {error}") from None


def _chat(args: argparse.Namespace) -> int:
    memory = _memory(args)
    try:
        return run_chat(memory, args.thread, args.data_dir)
    finally:
        # The split planned after the last reply lands now, while warnings are still one
        # line each: left to interpreter shutdown it failed, with an unformatted line.
        memory.close()


def _transcript(args: argparse.Namespace) -> int:
    for message in _memory(args).transcript(args.thread):
        if args.json:
            print(json.dumps(message, ensure_ascii=False))
        else:
            stamp = f"[{message['timestamp']}] " if message.get("timestamp") else ""
            print(f"{stamp}{message['role']}: {message['content']}")
    return 0


def _expand(args: argparse.Namespace) -> int:
    for message in _memory(args).expand(args.thread, list(args.ids)):
        if args.json:
            print(json.dumps(message, ensure_ascii=False))
        else:
            stamp = f"[{message['timestamp']}] " if message.get("timestamp") else ""
            print(f"{stamp}{message['role']} ({message['id']}): {message['content']}")
    return 0


def _import(args: argparse.Namespace) -> int:
    records = read_jsonl(args.file)
    check_records(records)  # the whole file, before the memory is even opened
    memory = _memory(args)
    memory.require_checkpoints(args.thread)  # never start a thread over without its history
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


def _context(args: argparse.Namespace) -> int:
    memory = _memory(args)
    memory.require_checkpoints(args.thread)  # a lost checkpoint database is one line, status 2
    report = memory.context(args.thread, args.text)
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
        print(json.dumps(shown, ensure_ascii=False, indent=2))
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


def _topics(args: argparse.Namespace) -> int:
    memory = _memory(args)
    topics = memory.topics(args.thread)
    if args.map is not None:
        _write_map(args, memory, topics)
    if args.json:
        print(json.dumps(topics, ensure_ascii=False, indent=2))
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
            ("  " * (depth - 1) + "└ " if depth else "") + clip(t["name"], 50),
        ]
        for depth, t in tree_order(topics)
    ]
    headers = ["id", "status", "messages", "last score", "memory", "tier", "name"]
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


def _repair(args: argparse.Namespace) -> int:
    return run_repair(args, _memory)


def _signal(args: argparse.Namespace) -> int:
    return run_signal(args, _memory)


def _review(args: argparse.Namespace) -> int:
    return run_review_command(args, _memory)


def _workflow(args: argparse.Namespace) -> int:
    return run_workflow(args, _check_data_dir)


def _check(args: argparse.Namespace) -> int:
    require_data_dir(args.data_dir)
    report = _memory(args).check(args.thread, checkpoint_id=args.checkpoint)
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


def _run(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    with cli_logging(PROG, verbose=getattr(args, "verbose", False)):
        if args.command == "demo":
            return run_demo(args.data_dir, args.thread, args.budget)
        if args.command == "bench":
            return run_bench(args)
        handlers = {
            "chat": _chat,
            "import": _import,
            "context": _context,
            "topics": _topics,
            "transcript": _transcript,
            "expand": _expand,
            "check": _check,
            "workflow": _workflow,
            "migrate": run_migrate,
            "repair": _repair,
            **dict.fromkeys(SIGNAL_COMMANDS, _signal),
            **dict.fromkeys(REVIEW_COMMANDS, _review),
        }
        try:
            return handlers[args.command](args)
        except InputError as error:
            _error(str(error))
            return INPUT_ERROR
        except ThreadBusyError as error:
            _error(str(error))
            return BUSY
        except BaseException as error:  # a Rust panic in Chroma is no Exception
            fault = store_fault_of(error, getattr(args, "data_dir", None))
            if fault is None:
                raise
            logging.getLogger(__name__).debug("store fault", exc_info=error)  # --verbose
            _error(str(fault))
            return INPUT_ERROR


def _error(text: str) -> None:
    print(f"{PROG}: error: {_one_line(text)}", file=sys.stderr, flush=True)


def _os_error(error: OSError) -> str:
    """``path: reason`` of a file-system error."""
    if error.filename is not None:
        target = f" -> {error.filename2}" if error.filename2 is not None else ""
        return f"{error.filename}{target}: {error.strerror or first_line(error)}"
    return first_line(error)


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so the interpreter's last flush cannot fail too."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    try:
        try:
            status = _run(argv)
        except SystemExit:  # argparse: --help, or a usage error
            sys.stdout.flush()
            raise
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return status
    except BrokenPipeError:  # the reader went away (``| head``)
        _silence_stdout()
        _error("output closed early (the reader of the pipe went away); the rest is unprinted")
        return CLOSED_PIPE
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return INTERRUPTED
    except OSError as error:  # a path the command cannot use (permissions, a directory…)
        _error(_os_error(error))
        return INPUT_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
