"""Tables and the chart of the ``bench topics`` report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph_topics.bench.topics import CONTIGUOUS, DAYS, MEMORY, SCATTERED, SESSIONS
from langgraph_topics.cli.tables import render_table

_SHAPE_HEADS = ["topics/100 msgs", "largest topic", "1-msg topics", "unsplit"]


def _number(value: float | None, fmt: str = "{:.3f}") -> str:
    return "-" if value is None else fmt.format(value)


def _shape_cells(figures: dict[str, Any]) -> list[str]:
    return [
        f"{figures['per_100']:.2f}",
        f"{figures['largest_share']:.3f}",
        f"{figures['single_share']:.3f}",
        f"{figures['unsplit_share']:.3f}",
    ]


def topics_tables(report: dict[str, Any]) -> str:
    """The LoCoMo summary, per conversation, and the MemoryBank subjects."""
    config = report["config"]
    budgets = [str(b) for b in config["budgets"]]
    locomo = report["locomo"]
    summary = locomo["summary"]
    sessions = summary["sessions"]
    parts = [
        f"LoCoMo: {len(locomo['conversations'])} conversations, {sessions['messages']} messages, "
        f"{sessions['n']} questions with ≥ 2 evidence turns; tokens by {config['token_estimate']}; "
        f"random partitions: mean of {config['draws']} seeded draws with the memory's topic sizes",
    ]
    rows: list[list[str]] = []
    for budget in budgets:
        figures = summary[budget]
        for name in (MEMORY, CONTIGUOUS, SCATTERED):
            rows.append(
                [
                    name if name == MEMORY else f"  {name}",
                    f"{int(budget):,}",
                    _number(figures["spread"][name]),
                    *(_shape_cells(figures) if name == MEMORY else ["same sizes", "", "", ""]),
                ]
            )
    rows.append([SESSIONS, "-", _number(sessions["spread"][SESSIONS]), *_shape_cells(sessions)])
    parts.append(
        "\nevidence spread (0 = a question's evidence in one topic) and topic shape\n"
        + render_table(["partition", "budget", "spread", *_SHAPE_HEADS], rows)
    )
    rows = []
    for entry in locomo["conversations"]:
        for budget in budgets:
            run = entry["budgets"][budget]
            spread = run["spread"]
            rows.append(
                [
                    entry["conversation"],
                    f"{int(budget):,}",
                    run["messages"],
                    run["topics"],
                    f"{run['per_100']:.2f}",
                    f"{run['largest_share']:.3f}",
                    _mean_cell(spread[MEMORY]),
                    _mean_cell(spread[CONTIGUOUS]),
                    _mean_cell(entry[SESSIONS]["spread"]),
                    f"{run['import_seconds']:.0f}",
                ]
            )
    parts.append(
        "\nper conversation\n"
        + render_table(
            [
                "conversation",
                "budget",
                "messages",
                "topics",
                "topics/100",
                "largest",
                "spread",
                "random contig.",
                "sessions",
                "import s",
            ],
            rows,
        )
    )
    if "memorybank" in report:
        parts.append(memorybank_table(report))
    return "\n".join(parts)


def _mean_cell(values: list[float]) -> str:
    return f"{sum(values) / len(values):.3f}" if values else "-"


def memorybank_table(report: dict[str, Any]) -> str:
    """Topics per recurring subject, per language and budget, beside the baselines."""
    budgets = [str(b) for b in report["config"]["budgets"]]
    rows: list[list[str]] = []
    heads = "users, subjects, mean exchanges and days per subject"
    notes = []
    for language, figures in report["memorybank"]["summary"].items():
        notes.append(
            f"{language}: {figures['users']} users, {figures['messages']} messages, "
            f"{figures['subjects']} recurring subjects, "
            f"{_number(figures['exchanges_per_subject'], '{:.1f}')} exchanges and "
            f"{_number(figures[DAYS], '{:.2f}')} days each"
        )
        for budget in budgets:
            run = figures[budget]
            per = run["topics_per_subject"]
            rows.append(
                [
                    language,
                    f"{int(budget):,}",
                    _number(per[MEMORY], "{:.2f}"),
                    _number(per[CONTIGUOUS], "{:.2f}"),
                    _number(per[SCATTERED], "{:.2f}"),
                    _number(figures[DAYS], "{:.2f}"),
                    *_shape_cells(run),
                ]
            )
    table = render_table(
        [
            "data",
            "budget",
            "memory",
            "random contig.",
            "random scattered",
            "per day",
            *_SHAPE_HEADS,
        ],
        rows,
    )
    return (
        "\nMemoryBank: topics per recurring subject (a hobby mentioned on ≥ 2 days; 1 is best)\n"
        f"({heads}: " + "; ".join(notes) + ")\n" + table
    )


def plot_topics(report: dict[str, Any], path: Path) -> Path:
    """Draw evidence spread against budget (and MemoryBank topics per subject when run)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    budgets = [int(b) for b in report["config"]["budgets"]]
    summary = report["locomo"]["summary"]
    memorybank = report.get("memorybank", {}).get("summary", {})
    panels = 2 if memorybank else 1
    figure, axes_row = plt.subplots(1, panels, figsize=(6.5 * panels, 4.6), squeeze=False)
    axes = axes_row[0][0]
    for name, style in ((MEMORY, "k-o"), (CONTIGUOUS, "--s"), (SCATTERED, ":^")):
        values = [summary[str(b)]["spread"][name] for b in budgets]
        points = [v if v is not None else float("nan") for v in values]
        axes.plot(budgets, points, style, label=name)
    session_spread = summary["sessions"]["spread"][SESSIONS]
    if session_spread is not None:
        axes.axhline(session_spread, color="grey", linestyle="-.", label=SESSIONS)
    _budget_axis(axes, budgets)
    axes.set_ylabel("mean evidence spread (0 = one topic)")
    axes.set_ylim(0, 1.02)
    names = ", ".join(report["config"]["conversations"])
    axes.set_title(f"evidence spread, {Path(report['config']['data']).stem} ({names})", fontsize=9)
    axes.legend(fontsize=8)
    if memorybank:
        axes = axes_row[0][1]
        highest = 1.0
        for language, figures in memorybank.items():
            values = [figures[str(b)]["topics_per_subject"][MEMORY] for b in budgets]
            axes.plot(budgets, values, "-o", label=f"{language}: {MEMORY}")
            contiguous = [figures[str(b)]["topics_per_subject"][CONTIGUOUS] for b in budgets]
            axes.plot(budgets, contiguous, "--s", label=f"{language}: {CONTIGUOUS}")
            if figures[DAYS] is not None:
                axes.axhline(figures[DAYS], linestyle=":", color="grey")
            highest = max(highest, figures[DAYS] or 0, *(v or 0 for v in values + contiguous))
        _budget_axis(axes, budgets)
        axes.set_ylabel("topics per recurring subject (1 is best; dotted: days)")
        axes.set_ylim(0, highest * 1.15)
        axes.set_title("MemoryBank, each user's days concatenated", fontsize=9)
        axes.legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def _budget_axis(axes: Any, budgets: list[int]) -> None:
    axes.set_xscale("log", base=2)
    axes.set_xticks(budgets, [f"{b:,}" for b in budgets])
    axes.set_xlabel("token budget")
    axes.grid(alpha=0.3)
