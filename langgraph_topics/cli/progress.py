"""Progress of a long command on standard error, drawn by ``tqdm``, on a terminal only.

A bar redrawn with carriage returns is for a person watching; in a log (standard error
redirected, a CI job) it was one long line of them. ``tqdm`` sizes the bar to the terminal and
shows the rate and the time left; when standard error is not a terminal it draws nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class Progress(Protocol):
    """Told how many items are done (a running total)."""

    def __call__(self, done: int) -> None:
        """Show that ``done`` items of the total are done."""


def stderr_is_terminal() -> bool:
    """Whether standard error is a terminal (a test's capture, or a log file, is not)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced by an object without it, or closed
        return False


@contextmanager
def progress_bar(total: int, description: str, unit: str) -> Iterator[Progress]:
    """A bar of ``total`` items on standard error for the block; disabled off a terminal.

    Yields:
        A callable taking the running total done (as ``TopicMemory.import_messages`` reports
        it); the bar is closed (its line ended) when the block ends, by an error too.
    """
    from tqdm import tqdm  # type: ignore[import-untyped]  # no stubs installed

    bar = tqdm(
        total=total,
        desc=description,
        unit=unit,
        file=sys.stderr,
        disable=not stderr_is_terminal(),
        dynamic_ncols=True,
    )

    def advance(done: int) -> None:
        bar.update(done - bar.n)

    try:
        yield advance
    finally:
        bar.close()
