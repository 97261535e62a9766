"""What the history layer adds to an import (issue 38: at most 1.5× today's import).

One LoCoMo conversation is imported into a new memory, as an application imports a chat
history, with the history layer off (the import alone: what every import costs today) and on
(the import, then the refined turn of every split exchange recorded and the units, buckets and
themes computed and written beside them: what ``themes`` does on a thread never reviewed). The
two runs alternate, each in a data directory of its own, so that a machine shared with other
work slows both alike. What a process loads once (the embedding model; the word frequencies the
refined turns' keywords are ranked by, 1-4 s on a busy machine) is loaded before the first run.
"""

from __future__ import annotations

import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langgraph_topics.bench.report import simple_table

THREAD = "history-cost"
TARGET_RATIO = 1.5
"""The issue's ceiling: the import with the layer on against the import alone."""
Progress = Callable[[str], None]


def conversation_records(
    data: Path, conversation: str | None, messages: int | None
) -> tuple[str, list[dict[str, Any]]]:
    """The sample id and import records of one LoCoMo conversation (the first by default).

    Raises:
        SystemExit: The file is no LoCoMo file, or holds no such conversation (one line).
    """
    from langgraph_topics.datasets.locomo import conversation_messages

    try:
        raw = json.loads(data.read_text("utf-8"))
    except (OSError, ValueError) as error:
        raise SystemExit(f"{data}: not a LoCoMo JSON file ({error})") from error
    samples = raw if isinstance(raw, list) else [raw]
    chosen = [s for s in samples if isinstance(s, dict)]
    if conversation is not None:
        chosen = [s for s in chosen if s.get("sample_id") == conversation]
    if not chosen:
        raise SystemExit(f"{data}: no conversation {conversation or ''}".rstrip())
    try:
        records = conversation_messages(chosen[0])[0]
    except (KeyError, TypeError, ValueError) as error:
        raise SystemExit(f"{data}: not a LoCoMo conversation ({error!r})") from error
    return str(chosen[0].get("sample_id", "?")), records[:messages] if messages else records


def run_history_cost(
    data: Path,
    conversation: str | None,
    messages: int | None,
    repeats: int,
    budget: int,
    progress: Progress,
) -> dict[str, Any]:
    """Import the conversation ``repeats`` times with the layer off and on, alternating."""
    from langgraph_topics.memory import TopicMemory

    sample, records = conversation_records(data, conversation, messages)
    runs: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    scratch = Path(tempfile.mkdtemp(prefix="bench-history-cost-"))
    try:
        with TopicMemory(data_dir=scratch / "warm", budget_tokens=budget) as memory:
            # The embedding model and the word frequencies load once a process: not timed.
            memory.import_messages(THREAD, records[:40])
            memory.themes(THREAD)
        for repeat in range(repeats):
            order = ("off", "on") if repeat % 2 == 0 else ("on", "off")
            for layer in order:
                progress(f"history-cost: {sample}, run {repeat + 1}/{repeats}, layer {layer}")
                folder = scratch / f"{layer}-{repeat}"
                with TopicMemory(data_dir=folder, budget_tokens=budget) as memory:
                    runs[layer].append(_timed_import(memory, records, layer == "on"))
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    off = statistics.median(r["total_s"] for r in runs["off"])
    on = statistics.median(r["total_s"] for r in runs["on"])
    ratio = round(on / off, 3) if off > 0 else None
    off_cpu = statistics.median(r["cpu_s"] for r in runs["off"])
    on_cpu = statistics.median(r["cpu_s"] for r in runs["on"])
    return {
        "conversation": sample,
        "messages": len(records),
        "budget": budget,
        "repeats": repeats,
        "runs": runs,
        "rows": [_row("import alone (layer off)", runs["off"]), _row("layer on", runs["on"])],
        "ratio": ratio,
        "cpu_ratio": round(on_cpu / off_cpu, 3) if off_cpu > 0 else None,
        "target_ratio": TARGET_RATIO,
        "within_target": ratio is not None and ratio <= TARGET_RATIO,
    }


def _timed_import(memory: Any, records: Sequence[dict[str, Any]], layer: bool) -> dict[str, float]:
    started, used = time.perf_counter(), time.process_time()
    memory.import_messages(THREAD, list(records))
    imported, imported_cpu = time.perf_counter(), time.process_time()
    themes = len(memory.themes(THREAD)) if layer else 0
    done, done_cpu = (
        (time.perf_counter(), time.process_time()) if layer else (imported, imported_cpu)
    )
    return {
        "import_s": imported - started,
        "history_s": done - imported,
        "total_s": done - started,
        "cpu_s": done_cpu - used,
        "history_cpu_s": done_cpu - imported_cpu,
        "themes": float(themes),
    }


def _row(name: str, runs: Sequence[dict[str, float]]) -> dict[str, Any]:
    def median(key: str) -> float:
        return round(statistics.median(r[key] for r in runs), 2)

    return {
        "name": name,
        "import_s": median("import_s"),
        "history_s": median("history_s"),
        "total_s": median("total_s"),
        "cpu_s": median("cpu_s"),
        "history_cpu_s": median("history_cpu_s"),
        "each_s": [round(r["total_s"], 2) for r in runs],
    }


def history_cost_table(report: dict[str, Any]) -> str:
    """The two medians side by side, and their ratio against the 1.5× ceiling."""
    ratio = report["ratio"]
    verdict = "within" if report["within_target"] else "over"
    title = (
        f"import of LoCoMo {report['conversation']} ({report['messages']} messages, budget "
        f"{report['budget']}), {report['repeats']} runs each, medians: ratio {ratio} "
        f"({verdict} the {report['target_ratio']:g}× ceiling; CPU time {report['cpu_ratio']})"
    )
    headers = ["", "import s", "refined turns + view s", "total s", "CPU s", "runs s"]
    body = [
        [
            row["name"],
            f"{row['import_s']:.2f}",
            f"{row['history_s']:.2f}",
            f"{row['total_s']:.2f}",
            f"{row['cpu_s']:.2f}",
            " ".join(f"{s:.2f}" for s in row["each_s"]),
        ]
        for row in report["rows"]
    ]
    return title + "\n\n" + simple_table(headers, body)
