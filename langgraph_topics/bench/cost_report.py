"""``bench cost``'s figures: price sheets, percentiles, issue 33's acceptance ratios, the table."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langgraph_topics.bench.report import simple_table

REFERENCE_THRESHOLD = 0.3
"""Seed 000's threshold: a topic window scoring under it returns nothing the main model sees."""


@dataclass(frozen=True)
class Prices:
    """Dollars per million tokens for one tier."""

    input: float
    cache_read: float
    output: float


SHEETS: dict[str, dict[str, Prices]] = {
    "auto": {"strong": Prices(3.0, 0.30, 15.0), "cheap": Prices(0.80, 0.08, 4.0)},
    "explicit": {"strong": Prices(3.0, 0.30, 15.0), "cheap": Prices(0.80, 0.08, 4.0)},
}
"""``auto``: cache reads wherever the prefix repeats (OpenAI-style); ``explicit``: the same
prices, cache reads only up to a ``cache_control`` breakpoint in the request (Anthropic-style)."""


def cost(charge: dict[str, Any], sheet: str) -> float:
    """Dollars of a charge (``cost._charge``'s output) on a price sheet."""
    total = 0.0
    for row in charge.get("roles", {}).values():
        prices = SHEETS[sheet][row["tier"]]
        cached = row["cached"] if sheet == "auto" else row["explicit_cached"]
        total += (
            (row["input"] - cached) * prices.input
            + cached * prices.cache_read
            + row["output"] * prices.output
        ) / 1e6
    return total


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile (``share`` in 0–1) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def summarise_case(case: dict[str, Any]) -> dict[str, Any]:
    """Add ``summary`` (figures of the measured turns) and ``acceptance`` to one case."""
    turns = case["turns"]
    measured = [t for t in turns if not t["warmup"]] or turns
    first = turns[0]["memory"]
    walls = [t["memory"]["wall_s"] for t in measured]
    retrieval = [t["retrieval_only"] for t in measured]
    full = [t["full_context"] for t in measured]
    fits = all(f["fits"] for f in full)
    roles: dict[str, dict[str, float]] = {}
    for turn in measured:
        for role, row in turn["memory"]["roles"].items():
            into = roles.setdefault(
                role, {"calls": 0.0, "input": 0.0, "cached": 0.0, "output": 0.0}
            )
            for key in into:
                into[key] += row[key] / len(measured)
    scores = [s for t in measured for s in t["memory"]["topic_window_scores"] if s is not None]

    def mean(key: str, rows: Sequence[dict[str, Any]]) -> float:
        return statistics.fmean(r[key] for r in rows)

    memory_rows = [t["memory"] for t in measured]

    def recall(rows: Sequence[dict[str, Any]]) -> float | None:
        # Over the turns whose question has evidence in the history (LoCoMo labels).
        found = [r["evidence_recall"] for r in rows if r.get("evidence_recall") is not None]
        return round(statistics.fmean(found), 3) if found else None

    summary: dict[str, Any] = {
        "measured_turns": len(measured),
        "memory": {
            "p50_s": round(percentile(walls, 0.5), 3),
            "p90_s": round(percentile(walls, 0.9), 3),
            "p99_s": round(percentile(walls, 0.99), 3),
            "first_turn_s": first["wall_s"],
            "first_turn_calls": first["calls"],
            "first_turn_input": first["input"],
            "calls": round(mean("calls", memory_rows), 2),
            "input": round(mean("input", memory_rows)),
            "cached": round(mean("cached", memory_rows)),
            "explicit_cached": round(mean("explicit_cached", memory_rows)),
            "output": round(mean("output", memory_rows)),
            "cost_auto": round(statistics.fmean(cost(r, "auto") for r in memory_rows), 5),
            "cost_explicit": round(statistics.fmean(cost(r, "explicit") for r in memory_rows), 5),
            "evidence_recall": recall(memory_rows),
            "roles": {r: {k: round(v, 1) for k, v in row.items()} for r, row in roles.items()},
            "package_s_p50": round(
                percentile([r["critical_path"]["package_s"] for r in memory_rows], 0.5), 3
            ),
            "model_s_p50": round(
                percentile([r["critical_path"]["model_s"] for r in memory_rows], 0.5), 3
            ),
            "topic_windows_max": max(
                (len(t["memory"]["topic_window_scores"]) for t in turns), default=0
            ),
            # No call (``topic_window_reads=0``): none of them returned nothing used.
            "topic_window_low_share": round(
                sum(1 for s in scores if s < REFERENCE_THRESHOLD) / len(scores), 3
            )
            if scores
            else 0.0,
            "splitter_input_max": max(
                (t["memory"]["splitter_input_max"] for t in turns), default=0
            ),
            "after_reply_calls": sum(t["memory"]["after_reply_calls"] for t in measured),
            "format_retries": sum(t["memory"]["format_retries"] for t in turns),
        },
        "retrieval_only": {
            "p50_s": round(percentile([r["wall_s"] for r in retrieval], 0.5), 3),
            "search_s_p50": round(percentile([r["search_s"] for r in retrieval], 0.5), 4),
            "input": round(mean("input", retrieval)),
            "cached": round(mean("cached", retrieval)),
            "output": round(mean("output", retrieval)),
            "cost_auto": round(statistics.fmean(cost(r, "auto") for r in retrieval), 5),
            "cost_explicit": round(statistics.fmean(cost(r, "explicit") for r in retrieval), 5),
            "evidence_recall": recall(retrieval),
        },
        "full_context": {"fits": False, "input": round(mean("input_tokens", full))}
        if not fits
        else {
            "fits": True,
            "p50_s": round(percentile([f["wall_s"] for f in full], 0.5), 3),
            "input": round(mean("input", full)),
            "cached": round(mean("cached", full)),
            "cost_auto": round(statistics.fmean(cost(f, "auto") for f in full), 5),
            "cost_explicit": round(statistics.fmean(cost(f, "explicit") for f in full), 5),
        },
    }
    case["summary"] = summary
    case["acceptance"] = acceptance(summary, case["history_tokens"])
    return case


def acceptance(summary: dict[str, Any], history_tokens: int) -> list[dict[str, Any]]:
    """Issue 33's acceptance checks that one case can answer, each with its value and verdict."""
    memory, retrieval, full = summary["memory"], summary["retrieval_only"], summary["full_context"]
    checks: list[tuple[str, float | None, float | None]] = [
        ("p50 / retrieval-only p50", _ratio(memory["p50_s"], retrieval["p50_s"]), 1.5),
        ("p99 / p50", _ratio(memory["p99_s"], memory["p50_s"]), 2.0),
        ("first turn after import / p50", _ratio(memory["first_turn_s"], memory["p50_s"]), 1.5),
        ("cost / retrieval-only (auto)", _ratio(memory["cost_auto"], retrieval["cost_auto"]), 1.0),
        (
            "cost / retrieval-only (explicit)",
            _ratio(memory["cost_explicit"], retrieval["cost_explicit"]),
            1.5,
        ),
    ]
    if full.get("fits") and history_tokens <= 40_000:
        # Shown, not judged: with automatic caching the whole history is one stable prefix, so
        # full context costs less than retrieval-only itself; issue 33's 0.2x is the explicit
        # sheet's (its table: $0.054 a turn against $0.074 for full context).
        checks.append(
            ("cost / full context (auto)", _ratio(memory["cost_auto"], full["cost_auto"]), None)
        )
        checks.append(
            (
                "cost / full context (explicit)",
                _ratio(memory["cost_explicit"], full["cost_explicit"]),
                0.2,
            )
        )
    # The product's claim beside the cost: its window holds at least the evidence that a
    # retrieve-then-answer window of the same budget holds (LoCoMo's labels).
    checks.append(
        (
            "retrieval-only recall / memory recall",
            _ratio(retrieval["evidence_recall"], memory["evidence_recall"]),
            1.0,
        )
    )
    checks.append(("splitter input tokens (max)", memory["splitter_input_max"], 32_000))
    checks.append(("topic windows in a turn (max)", memory["topic_windows_max"], 20))
    checks.append(("topic-window calls scoring < 0.3", memory["topic_window_low_share"], 0.25))
    return [
        {
            "check": name,
            "value": value,
            "limit": limit,
            "pass": None if limit is None else value is not None and value <= limit,
        }
        for name, value, limit in checks
    ]


def cost_table(report: dict[str, Any]) -> str:
    """The human report: one row per case, the acceptance checks, the models it assumed."""
    rows = []
    for case in report["cases"]:
        s = case["summary"]
        m, r, f = s["memory"], s["retrieval_only"], s["full_context"]
        cached_share = f"{m['cached'] / m['input']:.0%}" if m["input"] else "-"
        full_text = (
            f"{f['p50_s']:.2f} s ${f['cost_auto']:.4f}/${f['cost_explicit']:.4f}"
            if f["fits"]
            else f"does not fit ({f['input']:,})"
        )
        recalls = "/".join(
            "-" if v is None else f"{v:.3f}" for v in (m["evidence_recall"], r["evidence_recall"])
        )
        rows.append(
            [
                f"{case['history']} ({case['history_tokens']:,})",
                f"{case['budget']:,}",
                f"{m['calls']:g}",
                f"{m['input']:,} ({cached_share})",
                f"{m['p50_s']:.2f}/{m['p90_s']:.2f}/{m['p99_s']:.2f}",
                f"{m['first_turn_s']:.2f} ({m['first_turn_calls']})",
                f"${m['cost_auto']:.4f}/${m['cost_explicit']:.4f}",
                f"{r['p50_s']:.2f} s ${r['cost_auto']:.4f}/${r['cost_explicit']:.4f}",
                full_text,
                recalls,
            ]
        )
    headers = [
        "history (tokens)",
        "budget",
        "calls/turn",
        "input/turn (cached)",
        "p50/p90/p99 s",
        "first turn s (calls)",
        "cost auto/explicit",
        "retrieval-only",
        "full context",
        "recall memory/retrieval",
    ]
    parts = [
        "one chat turn with every role on a model (simulated provider)",
        simple_table(headers, rows),
    ]
    for case in report["cases"]:
        m = case["summary"]["memory"]
        role_rows = [
            [
                role,
                f"{row['calls']:g}",
                f"{row['input']:,.0f}",
                f"{row['cached']:,.0f}",
                f"{row['output']:,.0f}",
            ]
            for role, row in sorted(m["roles"].items())
        ]
        parts.append(
            f"\n{case['history']} @{case['budget']}: per role and turn (mean of "
            f"{case['summary']['measured_turns']} turns); user-facing time p50: model calls "
            f"{m['model_s_p50']:.2f} s, the package {m['package_s_p50']:.2f} s; import "
            f"{case['import_s']:.0f} s; calls after the reply "
            f"{m['after_reply_calls']}; format retries {m['format_retries']}"
        )
        parts.append(simple_table(["role", "calls", "input", "cached", "output"], role_rows))
        checks = [
            [
                c["check"],
                "-" if c["value"] is None else f"{c['value']:g}",
                "-" if c["limit"] is None else f"{c['limit']:g}",
                "shown" if c["pass"] is None else "pass" if c["pass"] else "FAIL",
            ]
            for c in case["acceptance"]
        ]
        parts.append(simple_table(["acceptance (issue 33)", "value", "limit", ""], checks))
    config = report["config"]
    strong, cheap = config["latency_model"]["strong"], config["latency_model"]["cheap"]
    parts.append(
        "\nlatency model: "
        + "; ".join(
            f"{t['model']} {t['base_s']} s + {t['output_tokens_per_s']:g} output tokens/s + "
            f"{t['ms_per_input_token']} ms per input token"
            for t in (strong, cheap)
        )
        + f" (time scale {config['time_scale']:g}); prefix cache: the longest prefix seen, from "
        f"{config['cache_model']['minimum']} tokens in "
        f"{config['cache_model']['block']}-token blocks; "
        "prices $/M input, cache read, output: strong 3 / 0.30 / 15, cheap 0.80 / 0.08 / 4 "
        "(explicit sheet: cache reads only up to a breakpoint the request marks)"
    )
    return "\n".join(parts)
