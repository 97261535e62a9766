"""Human-readable tables for the CLI, and the JSON it prints instead under ``--json``."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence


def display_width(text: str) -> int:
    """Terminal columns a text takes (CJK characters take two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def clip(text: str, width: int) -> str:
    """Cut a text to ``width`` columns, marking the cut with an ellipsis."""
    text = " ".join(text.split())
    if display_width(text) <= width:
        return text
    out = ""
    for char in text:
        if display_width(out + char) > width - 1:
            break
        out += char
    return out + "…"


def render_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain aligned table with a header rule."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(display_width(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        return "  ".join(c + " " * (w - display_width(c)) for c, w in zip(row, widths, strict=True))

    return "\n".join(
        [line(cells[0]), line(["-" * w for w in widths]), *(line(r) for r in cells[1:])]
    ).rstrip()


def print_json(value: object) -> None:
    """Print a command's ``--json`` result: indented, non-ASCII text as it is."""
    print(json.dumps(value, ensure_ascii=False, indent=2))


def print_json_line(record: object) -> None:
    """One JSON object on its own line, flushed: a script reads a running command's lines."""
    print(json.dumps(record, ensure_ascii=False), flush=True)
