"""The table of the ``bench topics --interleaved`` report."""

from __future__ import annotations

from typing import Any

from langgraph_topics.bench.interleaved import BASELINES, REFERENCES
from langgraph_topics.bench.topics import MEMORY
from langgraph_topics.cli.tables import render_table

_HEADS = [
    "partition",
    "budget",
    "blocks",
    "largest",
    "homog.",
    "compl.",
    "V",
    "B³ P",
    "B³ R",
    "B³ F1",
]
_KEYS = ("homogeneity", "completeness", "v_measure", "b3_precision", "b3_recall", "b3_f1")


def _row(name: str, budget: str, figures: dict[str, Any]) -> list[str]:
    return [
        name,
        budget,
        str(figures["blocks"]),
        f"{figures['largest_share']:.3f}",
        *(f"{figures[k]:.3f}" for k in _KEYS),
    ]


def interleaved_table(report: dict[str, Any]) -> str:
    """One block of rows per woven conversation: the memory per budget, then the baselines."""
    parts = [
        "topics against the source of each message (1 is best; blocks: topics, plus the "
        "unsplit tail as one; largest: the largest block's share of the messages)"
    ]
    for entry in report["conversations"]:
        rows: list[list[str]] = []
        for budget, figures in entry["budgets"].items():
            rows.append(_row(MEMORY, f"{int(budget):,}", figures))
        for name in BASELINES:
            rows.append(_row(f"  {name}", "-", entry["baselines"][name]))
        for name in REFERENCES:
            rows.append(_row(f"  {name} (reference)", "-", entry["reference"][name]))
        parts.append(
            f"\n{entry['conversation']}: {entry['messages']} messages, {entry['segments']} "
            f"segments of {entry['sources']} sources, woven round robin\n"
            + render_table(_HEADS, rows)
        )
    return "\n".join(parts)
