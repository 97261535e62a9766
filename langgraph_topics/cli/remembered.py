"""What the command line remembers per data directory (``cli.json``): the token budget.

A budget is checked before it is stored, and checked again when it is read back (the file may
have been written by hand or by an older version): a bad one would make every later command of
that data directory fail.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from langgraph_topics.errors import InputError
from langgraph_topics.settings import MAX_BUDGET_TOKENS, MIN_BUDGET_TOKENS
from langgraph_topics.stores.durable import replace_durably

CLI_SETTINGS_FILE = "cli.json"
"""Remembers ``--budget`` per data directory, so later commands see the same window."""


def budget_problem(value: object) -> str | None:
    """Say what is wrong with a budget, or None when it is usable."""
    if not isinstance(value, int) or isinstance(value, bool):
        return f"a whole number of tokens is needed, got {value!r:.40}"
    if value < MIN_BUDGET_TOKENS:
        return (
            f"at least {MIN_BUDGET_TOKENS} tokens are needed (the system prompt and the recent "
            f"messages need room), got {value}"
        )
    if value > MAX_BUDGET_TOKENS:
        return f"at most {MAX_BUDGET_TOKENS:,} tokens are accepted, got {value:.3g}"
    return None


def parse_budget(text: str) -> int:
    """Read ``--budget`` (an ``argparse`` type: errors become one usage-error line)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a whole number of tokens is needed, got {text!r:.40}"
        ) from None
    problem = budget_problem(value)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return value


def remembered_budget(data_dir: Path, given: int | None, *, store: bool = True) -> int | None:
    """Store ``given`` as the data directory's budget, or read the stored one (None: none).

    ``store=False`` checks the file without writing it: a command refused afterwards (an
    unknown thread) leaves the data directory as it was.

    Raises:
        InputError: ``cli.json`` is unreadable or holds no usable budget (naming the file).
    """
    path = Path(data_dir) / CLI_SETTINGS_FILE
    if path.exists() and not path.is_file():
        raise InputError(f"{path}: not a file; delete it, or pass another --data-dir")
    if given is not None:
        if not store:
            return given
        path.parent.mkdir(parents=True, exist_ok=True)
        # Never a half-written file for the next command.
        replace_durably(path, json.dumps({"budget": given}).encode("utf-8"))
        return given
    if not path.is_file():
        return None
    try:
        stored = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise InputError(
            f"{path}: unreadable ({_reason(error)}); fix or delete it, or pass --budget"
        ) from None
    if not isinstance(stored, dict) or "budget" not in stored:
        raise InputError(
            f'{path}: expected {{"budget": <tokens>}}; fix or delete it, or pass --budget'
        )
    problem = budget_problem(stored["budget"])
    if problem:
        raise InputError(f"{path}: bad budget: {problem}; fix or delete it, or pass --budget")
    return int(stored["budget"])


def _reason(error: Exception) -> str:
    if isinstance(error, json.JSONDecodeError):
        return f"not JSON: {error.msg} at line {error.lineno} column {error.colno}"
    if isinstance(error, OSError):
        return error.strerror or str(error)
    return "not UTF-8" if isinstance(error, UnicodeDecodeError) else str(error)
