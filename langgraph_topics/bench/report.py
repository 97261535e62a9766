"""Tables and the recall-against-budget plot of the benchmark reports."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langgraph_topics.cli.tables import render_table

FULL = "full history"
NATIVE = "topic memory (native)"
_PARTS = ("system", "topics", "unsplit", "recent", "quoted")
_CATEGORY_LABELS = (("1", "multi-hop"), ("2", "temporal"), ("3", "open"), ("4", "single"))


def recall_tables(report: dict[str, Any]) -> str:
    """Mean recall, all-evidence rate, tokens, per category, and the native misses."""
    summary = report["summary"]
    budgets = [str(b) for b in report["config"]["budgets"]]
    methods = [m for m in report["methods"] if m in summary]
    heads = ["method", *(f"{int(b):,}" for b in budgets)]
    n = summary[methods[0]][budgets[0]]["all"]["n"] if methods else 0
    parts = [
        f"{n} questions, {len(report['config']['conversations'])} conversations, "
        f"tokens estimated by {report['config']['token_estimate']}",
    ]
    for key, title, fmt in (
        ("recall", "mean evidence recall", "{:.3f}"),
        ("all_present", "all evidence present (share of questions)", "{:.3f}"),
        ("tokens", "mean tokens in the window", "{:,.0f}"),
    ):
        rows = [[m, *(fmt.format(summary[m][b]["all"][key]) for b in budgets)] for m in methods]
        parts.append(f"\n{title}\n{render_table(heads, rows)}")
    rows = []
    for method in methods:
        for category, label in _CATEGORY_LABELS:
            cells = [summary[method][b][category] for b in budgets]
            rows.append(
                [
                    method if category == "1" else "",
                    f"{label} ({cells[0]['n']})",
                    *(f"{c['recall']:.3f}" if c["n"] else "-" for c in cells),
                ]
            )
    table = render_table(["method", "category (n)", *heads[1:]], rows)
    parts.append(f"\nmean evidence recall by category\n{table}")
    forms = _form_rows(summary, methods, budgets)
    if forms:
        table = render_table(["method", "question (n)", *heads[1:]], forms)
        title = "mean evidence recall by question form (dated: names a day or period)"
        parts.append(f"\n{title}\n{table}")
    composition = native_composition(report)
    if composition:
        rows = [[part, *(composition[b].get(part, 0.0) for b in budgets)] for part in _PARTS]
        parts.append(
            "\nnative: mean window composition (tokens; quoted = messages quoted)\n"
            + render_table(["part", *heads[1:]], rows)
        )
    latency = native_latency(report)
    if latency:
        rows = [
            [label, *(latency[b][key] if b in latency else "-" for b in budgets)]
            for key, label in (("median", "median"), ("p95", "95th percentile"))
        ]
        parts.append(
            "\nnative: context query latency (ms, the whole graph up to the assembled window)\n"
            + render_table(["", *heads[1:]], rows)
        )
    missing = report.get("native_missing") or {}
    if missing:
        reasons = sorted({r for counts in missing.values() for r in counts})
        rows = [[r, *(missing.get(b, {}).get(r, 0) for b in budgets)] for r in reasons]
        parts.append(
            "\nnative: where each evidence turn was (counts of evidence turns)\n"
            + render_table(["evidence turn", *heads[1:]], rows)
        )
    return "\n".join(parts)


def _form_rows(
    summary: dict[str, Any], methods: Sequence[str], budgets: Sequence[str]
) -> list[list[str]]:
    """Rows of the question-form table (none for a report made before forms were counted)."""
    rows: list[list[str]] = []
    for method in methods:
        for place, form in enumerate(("dated", "undated")):
            cells = [summary[method][b].get(form) for b in budgets]
            if any(cell is None for cell in cells):
                return []
            rows.append(
                [
                    method if place == 0 else "",
                    f"{form} ({cells[0]['n']})",
                    *(f"{c['recall']:.3f}" if c["n"] else "-" for c in cells),
                ]
            )
    return rows


def native_latency(report: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Median and 95th-percentile context-query latency of the native answers per budget."""
    latency: dict[str, dict[str, float]] = {}
    for budget in (str(b) for b in report["config"]["budgets"]):
        values = sorted(
            answer["latency_ms"]
            for row in report.get("rows", [])
            if (answer := _native_answer(row, budget)) and "latency_ms" in answer
        )
        if values:
            latency[budget] = {
                "median": round(statistics.median(values), 1),
                "p95": values[min(len(values) - 1, int(0.95 * len(values)))],
            }
    return latency


def _native_answer(row: dict[str, Any], budget: str) -> dict[str, Any] | None:
    native = row["results"].get(NATIVE, {})
    # Budgets are ints in a fresh report and strings once read back from JSON.
    found = native.get(budget) or native.get(int(budget))
    return found if isinstance(found, dict) else None


def native_composition(report: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Mean tokens per window section of the native answers, and quotes, at each budget."""
    composition: dict[str, dict[str, float]] = {}
    for budget in (str(b) for b in report["config"]["budgets"]):
        answers = []
        for row in report.get("rows", []):
            native = row["results"].get(NATIVE, {})
            # Budgets are ints in a fresh report and strings once read back from JSON.
            answer = native.get(budget) or native.get(int(budget))
            if answer:
                answers.append(answer)
        if not answers:
            continue
        means = {
            part: round(sum(a["sections"][part] for a in answers) / len(answers), 1)
            for part in _PARTS[:-1]
        }
        means["quoted"] = round(sum(a["quoted"] for a in answers) / len(answers), 2)
        composition[budget] = means
    return composition


def plot_recall(report: dict[str, Any], path: Path) -> Path:
    """Draw mean recall against budget for every method (full history as a line)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = report["summary"]
    budgets = [int(b) for b in report["config"]["budgets"]]
    figure, axes = plt.subplots(figsize=(7.5, 4.8))
    for method in report["methods"]:
        if method not in summary:
            continue
        values = [summary[method][str(b)]["all"]["recall"] for b in budgets]
        if method == FULL:
            axes.axhline(values[0], color="grey", linestyle=":", label=method)
            continue
        native = method.startswith("topic memory")
        axes.plot(
            budgets,
            values,
            marker="o",
            linewidth=2.6 if native else 1.4,
            label=method,
            color="black" if native else None,
        )
    axes.set_xscale("log", base=2)
    axes.set_xticks(budgets, [f"{b:,}" for b in budgets])
    axes.set_xlabel("token budget")
    axes.set_ylabel("mean evidence recall")
    axes.set_ylim(0, 1.02)
    axes.grid(alpha=0.3)
    conversations = report["config"]["conversations"]
    names = (
        ", ".join(conversations)
        if len(conversations) <= 5
        else f"{len(conversations)} conversations"
    )
    axes.set_title(f"evidence recall, {Path(report['config']['data']).stem} ({names})")
    axes.legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def simple_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """An aligned plain-text table (re-exported for the other benchmarks)."""
    return render_table(headers, rows)
