"""Human-readable tables for the CLI (``--json`` prints the raw objects instead)."""

from __future__ import annotations

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
