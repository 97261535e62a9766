"""Errors a person can act on: each message is one line naming the file:line, id or setting."""

from __future__ import annotations

import logging

_REPORTED = "_langgraph_topics_reported"


class InputError(ValueError):
    """Something given to the memory is wrong (a record, a file, a thread id, a setting).

    Raised before anything is written, so fixing the input and running again is always safe.
    """


class ThreadBusyError(RuntimeError):
    """Another process (or thread) held a conversation thread's lock for too long."""


class StoreError(RuntimeError):
    """A store cannot be read or written: a disk full, a read-only or forbidden file.

    The message is one line naming the file and what to do; ``path`` is that file. The stores
    are left as they were before the failing write (or read), so running again once the cause
    is gone is safe.
    """

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class DamagedStoreError(StoreError):
    """A store that is not derived data (the checkpoint database) is damaged.

    Derived stores (the topic index, the retrieval index) are rebuilt instead, with one warning
    line. The message names the file and the command that recovers what it still holds
    (``langgraph-topics repair``).
    """


def first_line(error: BaseException | str, limit: int = 300) -> str:
    """The first non-empty line of an error (or a text), at most ``limit`` characters.

    An error is shown as ``Type: message`` (just the type when the message is empty), so that
    a log line says what failed even when the provider's message is terse.
    """
    if isinstance(error, BaseException):
        text = str(error).strip()
        head = next((line.strip() for line in text.splitlines() if line.strip()), "")
        shown = f"{type(error).__name__}: {head}" if head else type(error).__name__
    else:
        shown = next((line.strip() for line in error.splitlines() if line.strip()), "")
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def mark_reported(error: BaseException) -> None:
    """Note that ``error`` was already logged (one line), so an outer handler need not repeat it.

    The command line drops a later traceback of the same error unless asked to be verbose.
    """
    try:
        setattr(error, _REPORTED, True)
    except (AttributeError, TypeError):  # pragma: no cover - exceptions with __slots__
        pass


def was_reported(error: BaseException | None) -> bool:
    """Whether ``mark_reported`` saw ``error``."""
    return error is not None and bool(getattr(error, _REPORTED, False))


def log_degraded(logger: logging.Logger, message: str, error: BaseException) -> None:
    """Log a step that fell back after ``error``: one line when the error was reported already.

    A role call that failed logged its own line (``mark_reported``); repeating its traceback
    for the step that caught it would turn one failure into dozens of lines.
    """
    if was_reported(error):
        logger.debug("%s: %s", message, first_line(error), exc_info=error)
    else:
        logger.error("%s", message, exc_info=error)
