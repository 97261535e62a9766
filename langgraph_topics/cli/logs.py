"""How the command line shows log records: one line each; tracebacks only with ``--verbose``.

A failing provider must not bury the conversation: every failed model call is one WARNING line
(``roles/llm/calling.py`` writes it, naming the role, the model and the error), and a handler
further out that logs the same error again with its traceback (a node's ``log.exception``) is
left out, since ``mark_reported`` flagged that error. Any other record carrying an exception is
folded into one line ending with the error's first line. ``--verbose`` shows the retries, the
DEBUG records of this package and every traceback in full.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from langgraph_topics.errors import first_line, was_reported

PACKAGE_LOGGER = "langgraph_topics"


class _OneLineFormatter(logging.Formatter):
    """``prog: warning: message[: Error: first line]``, never more than one line."""

    def __init__(self, prog: str) -> None:
        super().__init__()
        self.prog = prog

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            message = f"{message}: {first_line(error)}"
        message = " ".join(message.split())
        return f"{self.prog}: {record.levelname.lower()}: {message}"


class _VerboseFormatter(logging.Formatter):
    def __init__(self, prog: str) -> None:
        super().__init__(f"{prog}: %(levelname)s %(name)s: %(message)s")


class _StderrHandler(logging.Handler):
    """Writes to whatever ``sys.stderr`` is at the time (pytest's capture swaps it)."""

    def __init__(self, *, verbose: bool) -> None:
        super().__init__(logging.DEBUG if verbose else logging.WARNING)
        self.verbose = verbose

    def filter(self, record: logging.LogRecord) -> bool:
        if not super().filter(record):
            return False
        if self.verbose or not record.exc_info:
            return True
        return not was_reported(record.exc_info[1])  # already shown as one line

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
        except Exception:  # pragma: no cover - a closed standard error
            self.handleError(record)


@contextmanager
def cli_logging(prog: str, *, verbose: bool = False) -> Iterator[None]:
    """Route log records to standard error for one command, as described in the module doc."""
    handler = _StderrHandler(verbose=verbose)
    handler.setFormatter(_VerboseFormatter(prog) if verbose else _OneLineFormatter(prog))
    root = logging.getLogger()
    package = logging.getLogger(PACKAGE_LOGGER)
    package_level = package.level
    if verbose:
        package.setLevel(logging.DEBUG)
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
        package.setLevel(package_level)
