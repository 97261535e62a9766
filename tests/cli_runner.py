"""Run the command line in the test's process, its output captured."""

from __future__ import annotations

import io
import sys

import pytest

from langgraph_topics.cli.main import main


def run_cli(
    capsys: pytest.CaptureFixture[str], *args: str, stdin: str | None = None
) -> tuple[int, str, list[str]]:
    """Run the CLI in this process: status, stdout, the non-empty stderr lines.

    ``stdin``: what the command reads on standard input (None: pytest's, which has nothing).
    """
    saved = sys.stdin
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)
    try:
        status = main(list(args))
    finally:
        sys.stdin = saved
    out, err = capsys.readouterr()
    # A notebook test's kernel client, collected meanwhile, warns through the same handler.
    return status, out, [line for line in err.splitlines() if line.strip() and "zmq" not in line]
