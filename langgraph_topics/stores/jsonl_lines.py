"""Decode JSONL lines: every store's append-only files, read back after a crash as well.

A damaged or torn line decodes to None (and is reported by its reader with its line number);
well-formed files are parsed as one JSON array, in a little over half the time of a parse per
line, which is what reopening a long thread costs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def decode_lines(
    lines: Sequence[bytes], first_line: int = 1
) -> list[tuple[int, dict[str, Any] | None]]:
    """The non-blank lines, numbered, each as a JSON object or None (see :func:`decode_line`).

    Parsed as one JSON array when every line is a well-formed object; line by line otherwise,
    to find which.
    """
    numbered = [(number, line) for number, line in enumerate(lines, first_line) if line.strip()]
    try:
        records = json.loads(b"[" + b",".join(line for _, line in numbered) + b"]")
    except ValueError:  # UnicodeDecodeError included
        records = None
    if (
        isinstance(records, list)
        and len(records) == len(numbered)
        and all(isinstance(record, dict) for record in records)
    ):
        return [(number, record) for (number, _), record in zip(numbered, records, strict=True)]
    return [(number, decode_line(line)) for number, line in numbered]


def decode_line(line: bytes) -> dict[str, Any] | None:
    """One JSONL line as a JSON object, or None when it is not one (damaged, torn, other)."""
    try:
        record = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return record if isinstance(record, dict) else None
