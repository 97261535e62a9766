"""The ``langgraph-topics`` command line.

Exit status: 0 done; 1 ``check`` found a broken invariant (or ``repair`` could not recover
every message); 2 a usage or input error (a bad argument, import file, ``--data-dir``,
``cli.json`` or model setting, an unknown provider, a missing API key, a thread the data
directory does not hold given to a command that reads or amends one), reported as one line on
standard error before anything is written (or created), or a store fault (a full disk, a read-
only or damaged store: one line naming the file, ``cli.store_errors``); 3 the thread is busy
(another process kept writing it past the lock timeout); 130 interrupted (Ctrl-C). Standard
output closed early (``| head``) is one line too ("output closed early") with status 2. A
failing model provider is one warning line per failed call (``--verbose`` shows retries and
tracebacks). ``--help`` shows each command's examples (``cli.help_texts``); every command
takes ``--json``.

Start-up imports only the parser (``cli.parser``): each command imports LangGraph, Chroma and
the models when it runs, so ``--help``, ``--version`` and a usage error answer at once.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence

from langgraph_topics.cli.help_texts import EXAMPLES, PROG
from langgraph_topics.cli.logs import cli_logging
from langgraph_topics.cli.parser import INPUT_ERROR, build_parser, one_line
from langgraph_topics.cli.remembered import CLI_SETTINGS_FILE
from langgraph_topics.cli.store_errors import store_fault_of
from langgraph_topics.errors import InputError, ThreadBusyError, first_line

__all__ = ["CLI_SETTINGS_FILE", "EXAMPLES", "build_parser", "main"]

BUSY = 3
INTERRUPTED = 130
CLOSED_PIPE = INPUT_ERROR
"""A reader that went away (``| head``): one line and the status of every other stop."""

Handler = Callable[[argparse.Namespace], int]


CHAT_REVIEW_AT = "03:00"
"""The daily review time of ``chat`` when ``LANGGRAPH_TOPICS_REVIEW_AT`` sets none: a person
chatting day after day gets the seed's daily review (§4.8) without a cron of their own."""


def _chat(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from langgraph_topics.cli.chat import run_chat
    from langgraph_topics.cli.opening import open_memory, settings_of_environment

    settings = settings_of_environment()
    if settings.review_at is None:
        settings = replace(settings, review_at=CHAT_REVIEW_AT)
    memory = open_memory(args, settings)
    try:
        from langgraph_topics.cli.user_scope import scoped_memory

        turns = scoped_memory(memory, args)
        return run_chat(turns, args.thread, args.data_dir, as_json=args.json)
    finally:
        # The split planned after the last reply lands now, while warnings are still one
        # line each: left to interpreter shutdown it failed, with an unformatted line.
        memory.close()


def _handler(command: str) -> Handler:
    """The function running ``command``; each imports what it needs only when it runs."""
    if command == "chat":
        return _chat
    if command == "import":
        from langgraph_topics.cli.importer import run_import

        return run_import
    if command == "threads":
        from langgraph_topics.cli.opening import open_memory
        from langgraph_topics.cli.thread_list import run_threads

        return lambda args: run_threads(args, open_memory)
    if command in ("context", "topics", "transcript", "expand", "check"):
        from langgraph_topics.cli import reading

        handlers: dict[str, Handler] = {
            "context": reading.run_context,
            "topics": reading.run_topics,
            "transcript": reading.run_transcript,
            "expand": reading.run_expand,
            "check": reading.run_check,
        }
        return handlers[command]
    if command == "workflow":
        from langgraph_topics.cli.opening import check_data_dir
        from langgraph_topics.cli.workflow import run_workflow

        return lambda args: run_workflow(args, check_data_dir)
    if command == "migrate":
        from langgraph_topics.cli.migrate import run_migrate

        return run_migrate
    if command == "search":
        from langgraph_topics.cli.search import run_search

        return run_search
    if command in ("themes", "trace"):
        from langgraph_topics.cli.themes import run_themes, run_trace

        return run_themes if command == "themes" else run_trace
    if command == "forget":
        from langgraph_topics.cli.opening import open_memory
        from langgraph_topics.cli.user_scope import run_forget

        return lambda args: run_forget(args, open_memory)
    if command == "repair":
        from langgraph_topics.cli.opening import open_memory
        from langgraph_topics.cli.repair import run_repair

        return lambda args: run_repair(args, open_memory)
    from langgraph_topics.cli.review import REVIEW_COMMANDS, run_review_command
    from langgraph_topics.cli.signals import SIGNAL_COMMANDS, run_signal

    if command in SIGNAL_COMMANDS:
        return run_signal
    if command in REVIEW_COMMANDS:
        return run_review_command
    raise AssertionError(f"no handler for the command {command!r}")  # the parser knows them


def _run(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "check" and args.thread is None and args.user is None:
        args.thread = "default"
    with cli_logging(PROG, verbose=getattr(args, "verbose", False)):
        if args.command == "demo":
            from langgraph_topics.cli.demo import run_demo

            return run_demo(args.data_dir, args.thread, args.budget, as_json=args.json)
        if args.command == "bench":
            from langgraph_topics.bench.cli import run_bench

            return run_bench(args)
        try:
            from langgraph_topics.cli.user_scope import refuse_scope_without_user, scoped_args

            refuse_scope_without_user(args)
            scoped_args(args)
            return _handler(args.command)(args)
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
    print(f"{PROG}: error: {one_line(text)}", file=sys.stderr, flush=True)


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
