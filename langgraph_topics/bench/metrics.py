"""Evidence recall: how much of a question's evidence the assembled window holds."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from statistics import fmean
from typing import Any


def evidence_recall(evidence: Sequence[str], present: Collection[str]) -> float:
    """The share of the evidence turns present (1.0 for a question without evidence)."""
    if not evidence:
        return 1.0
    return sum(1 for turn in evidence if turn in present) / len(evidence)


def all_present(evidence: Sequence[str], present: Collection[str]) -> bool:
    """Whether every evidence turn is present."""
    return all(turn in present for turn in evidence)


def summarise(rows: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Mean recall, all-evidence rate and mean tokens of per-question rows (``n`` counts them)."""
    rows = list(rows)
    if not rows:
        return {"n": 0, "recall": 0.0, "all_present": 0.0, "tokens": 0.0}
    return {
        "n": len(rows),
        "recall": round(fmean(r["recall"] for r in rows), 4),
        "all_present": round(fmean(1.0 if r["all_present"] else 0.0 for r in rows), 4),
        "tokens": round(fmean(r["tokens"] for r in rows), 1),
    }
