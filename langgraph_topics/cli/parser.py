"""The argument parser of ``langgraph-topics``: every command, its options and examples.

Building it imports nothing heavy (no LangChain, LangGraph, Chroma or numpy): ``--help``,
``--version`` and a usage error answer at once; each command imports what it needs when it
runs (``cli.main``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, NoReturn

from langgraph_topics.bench.cli import add_bench_parser
from langgraph_topics.cli.help_texts import EXAMPLES, PROG
from langgraph_topics.cli.migrate import add_migrate_parser
from langgraph_topics.cli.remembered import parse_budget
from langgraph_topics.cli.repair import add_repair_parser
from langgraph_topics.cli.review import add_review_parsers
from langgraph_topics.cli.search import add_search_parser
from langgraph_topics.cli.signals import add_signal_parsers
from langgraph_topics.cli.themes import add_theme_parsers
from langgraph_topics.cli.user_scope import add_forget_parser, add_user_options
from langgraph_topics.cli.workflow import add_workflow_parser
from langgraph_topics.errors import InputError
from langgraph_topics.message_texts import text_problem
from langgraph_topics.settings import MIN_BUDGET_TOKENS
from langgraph_topics.thread_ids import check_thread_id, id_problem, scoped_parts

INPUT_ERROR = 2
DISTRIBUTION = "langgraph-topics"
"""The installed distribution whose version ``--version`` prints."""


class Parser(argparse.ArgumentParser):
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
        """Print the usage error as one line and exit with status 2 (no usage block)."""
        self.exit(INPUT_ERROR, f"{self.prog}: error: {one_line(message)} (see --help)\n")


class _VersionAction(argparse.Action):
    """``--version``: the installed version, looked up only when asked for."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any, **__: Any) -> NoReturn:
        print(f"{PROG} {package_version()}")
        parser.exit()


def package_version() -> str:
    """The installed distribution's version (``unknown`` when run from an uninstalled tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


def one_line(text: str) -> str:
    """Keep an error on one line (a path or a repr'd value may hold a newline)."""
    return " ".join(str(text).split("\n"))


def thread_type(text: str) -> str:
    """Read ``--thread`` (an ``argparse`` type: a bad id is a usage error).

    A user's stored thread id is refused like any id with a control character: a user's
    thread is named with ``--user``.
    """
    try:
        if scoped_parts(text) is not None:
            raise InputError(f"invalid thread id {text!r:.80}: {id_problem(text)}")
        return check_thread_id(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _message_text(text: str) -> str:
    """Read a message text argument (bytes that were not UTF-8 are a usage error)."""
    problem = text_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def common(parser: argparse.ArgumentParser) -> None:
    """The options every thread command shares: data directory, thread, budget, verbosity."""
    _data_dir(parser)
    parser.add_argument(
        "--thread", type=thread_type, default="default", help="conversation thread id"
    )
    add_user_options(parser)
    parser.add_argument(
        "--budget",
        type=parse_budget,
        default=None,
        help=(
            f"main-window token budget, at least {MIN_BUDGET_TOKENS} tokens "
            "(remembered per data directory)"
        ),
    )
    _verbose(parser)


def _data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".langgraph_topics"),
        help="where topics, index and checkpoints live (default ./.langgraph_topics)",
    )


def _verbose(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also show model retries and the full traceback of each failure",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = Parser(
        prog=PROG,
        description=(
            "Topic-partitioned chat memory: a conversation is split into topics, the active\n"
            "ones are read in parallel every turn, and the main model gets their results\n"
            "within a token budget."
        ),
    )
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str) -> argparse.ArgumentParser:
        made: argparse.ArgumentParser = commands.add_parser(
            name, help=summary, description=summary[:1].upper() + summary[1:] + "."
        )
        return made

    demo = command("demo", "run the scripted offline demo")
    common(demo)
    demo.add_argument(
        "--json", action="store_true", help="one JSON object a line per turn, then the check"
    )
    demo.set_defaults(data_dir=None)  # a fresh scratch directory unless one is given
    threads = command("threads", "list the threads of the data directory")
    threads.add_argument(
        "--json", action="store_true", help="print the threads as JSON (one object each)"
    )
    _data_dir(threads)
    _verbose(threads)
    threads.set_defaults(thread=None, budget=None)
    chat = command("chat", "chat with the memory (reads lines from standard input)")
    chat.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object a line per answered line (id, text, reply)",
    )
    common(chat)
    importer = command("import", "import a recorded conversation (JSONL) into a thread")
    importer.add_argument("file", type=Path, help="JSONL file, one message a line")
    importer.add_argument("--json", action="store_true", help="print what was imported as JSON")
    common(importer)
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
    common(context)
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
    common(topics)
    transcript = command("transcript", "print the whole conversation, oldest first")
    transcript.add_argument(
        "--json", action="store_true", help="one JSON record a line (id, role, content, timestamp)"
    )
    common(transcript)
    expand = command("expand", "print the original messages a summary card's fact cites")
    expand.add_argument("ids", nargs="+", metavar="ID", help="message ids (a fact's message_ids)")
    expand.add_argument(
        "--json", action="store_true", help="one JSON record a line (id, role, content, timestamp)"
    )
    common(expand)
    check = command("check", "check the invariants (exit status 1 when one is broken)")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.add_argument(
        "--checkpoint",
        metavar="ID",
        help="check the branch of this checkpoint (a fork, as Studio shows it); default newest",
    )
    common(check)
    # ``check --user U`` without --thread checks every thread of U (or that U is forgotten).
    check.set_defaults(thread=None)
    add_signal_parsers(commands, common)
    add_review_parsers(commands, common)
    add_workflow_parser(commands, common)
    add_migrate_parser(commands, thread_type)
    add_repair_parser(commands, common)
    add_forget_parser(commands, _data_dir)
    add_search_parser(commands, common)
    add_theme_parsers(commands, common)
    add_bench_parser(commands)
    return parser
