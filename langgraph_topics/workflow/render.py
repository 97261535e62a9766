"""Render the active path as the block at the top of the main window's system prompt.

The block is budgeted like every other piece of the window: ``fit_workflow_block`` renders it
at the richest detail that fits the room it is given, shortening the output summaries first,
then dropping them, then the second and the first level of successors, then the path before
the current step; when not even the current step fits, the block is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from langgraph_topics.prompts.loader import load_prompt
from langgraph_topics.tokens import TokenCounter
from langgraph_topics.workflow.records import ActivePath, NodeStatus, PathNode, WorkflowCounts


@dataclass(frozen=True)
class Detail:
    """How much of the active path a rendering shows."""

    summary_chars: int
    """Output summaries are cut to this many characters (0: none shown)."""
    successor_levels: int
    whole_path: bool
    """The path from the root (else the current step alone)."""


DETAILS = (
    Detail(summary_chars=200, successor_levels=2, whole_path=True),
    Detail(summary_chars=60, successor_levels=2, whole_path=True),
    Detail(summary_chars=0, successor_levels=2, whole_path=True),
    Detail(summary_chars=0, successor_levels=1, whole_path=True),
    Detail(summary_chars=0, successor_levels=0, whole_path=True),
    Detail(summary_chars=0, successor_levels=0, whole_path=False),
)
"""From the fullest rendering to the barest; the first that fits is used."""

STATUS_LABELS: dict[str, dict[NodeStatus, str]] = {
    "en": {"completed": "done", "running": "running", "pending": "pending", "failed": "failed"},
    "zh": {"completed": "已完成", "running": "进行中", "pending": "待处理", "failed": "失败"},
}
PHRASES: dict[str, dict[str, str]] = {
    "en": {
        "current": "  <- current step",
        "next": "Next:",
        "hidden": "({count} earlier steps on the path not shown)",
        "counts": "{completed} of {total} steps done, {running} running, {pending} pending",
        "failed": ", {failed} failed",
        "empty": "(no steps)",
    },
    "zh": {
        "current": "  ← 当前步骤",
        "next": "接下来：",
        "hidden": "（路径上更早的 {count} 个步骤未列出）",
        "counts": "共 {total} 步，已完成 {completed}，进行中 {running}，待处理 {pending}",
        "failed": "，失败 {failed}",
        "empty": "（没有步骤）",
    },
}


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _step_line(node: PathNode, language: str, detail: Detail, current: str | None) -> str:
    labels = STATUS_LABELS.get(language, STATUS_LABELS["en"])
    indent = "  " * max(0, node["level"] - 1)
    name = _one_line(node["name"], 120)
    named = name if name == node["id"] else f"{name} ({node['id']})"
    line = f"{indent}- [{labels[node['status']]}] {named}"
    if detail.summary_chars and node["summary"].strip():
        line += f": {_one_line(node['summary'], detail.summary_chars)}"
    if node["id"] == current and node["level"] == 0:
        line += PHRASES.get(language, PHRASES["en"])["current"]
    return line


def _counts(counts: WorkflowCounts, language: str) -> str:
    phrases = PHRASES.get(language, PHRASES["en"])
    text = phrases["counts"].format(**counts)
    return text + (phrases["failed"].format(**counts) if counts["failed"] else "")


def render_workflow_block(
    active: ActivePath,
    language: str,
    prompt_dir: str | Path | None = None,
    detail: Detail = DETAILS[0],
) -> str:
    """The workflow block (ending with a newline) at the given detail."""
    phrases = PHRASES.get(language, PHRASES["en"])
    current = active["current"]
    path: Sequence[PathNode] = active["path"]
    lines: list[str] = []
    if not detail.whole_path and len(path) > 1:
        lines.append(phrases["hidden"].format(count=len(path) - 1))
        path = path[-1:]
    lines.extend(_step_line(node, language, detail, current) for node in path)
    shown = [n for n in active["successors"] if n["level"] <= detail.successor_levels]
    if shown:
        lines.append(phrases["next"])
        lines.extend(_step_line(node, language, detail, current) for node in shown)
    if not lines:
        lines.append(phrases["empty"])
    block = load_prompt("workflow", language, prompt_dir).render(
        name=_one_line(active["name"], 120),
        workflow_id=active["workflow_id"],
        counts=_counts(active["counts"], language),
        steps="\n".join(lines),
    )
    return block.strip("\n") + "\n"


def with_workflow_block(block: str, system_prompt: str) -> str:
    """The system prompt with the workflow block on top (unchanged when the block is empty)."""
    return f"{block.rstrip()}\n\n{system_prompt}" if block else system_prompt


def fit_workflow_block(
    active: ActivePath,
    room: int,
    counter: TokenCounter,
    language: str,
    prompt_dir: str | Path | None = None,
) -> tuple[str, int]:
    """The richest rendering whose tokens fit ``room``, and its cost ('' and 0 when none fits).

    The cost counts the blank line that separates the block from the rest of the prompt, plus
    one token for a tokenizer that merges across that boundary.
    """
    for detail in DETAILS:
        block = render_workflow_block(active, language, prompt_dir, detail)
        cost = counter(block.rstrip() + "\n\n") + 1
        if cost <= room:
            return block, cost
    return "", 0
