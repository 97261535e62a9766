"""Render the main window's system prompt (seed 000 §5, §6.2)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from langgraph_topics.prompts.loader import load_prompt
from langgraph_topics.state.records import StoredMessage, TopicResult

NOTE_LABELS = {"en": ("Brief", "Summary"), "zh": ("简介", "总结")}
"""Labels of a topic block's brief and summary lines, per language."""


def quote_day(message: StoredMessage) -> str:
    """The calendar day a message was sent (``YYYY-MM-DD``; '' when it has no timestamp)."""
    stamp = message.get("timestamp", "")
    return stamp[:10] if len(stamp) >= 10 and stamp[4] == "-" else ""


def quote_line(message: StoredMessage) -> str:
    """One quoted message: ``speaker: content`` (the speaker's name, else the role)."""
    return f"{message.get('name') or message['role']}: {message['content']}"


def render_quotes(quoted: Sequence[StoredMessage]) -> str:
    """Quoted messages in the given order, each day's under a ``[YYYY-MM-DD]`` line."""
    lines: list[str] = []
    current = None
    for message in quoted:
        day = quote_day(message)
        if day and day != current:
            lines.append(f"[{day}]")
        current = day or current
        lines.append(quote_line(message))
    return "\n".join(lines)


def render_topic_block(
    result: TopicResult,
    quoted: Sequence[StoredMessage],
    language: str,
    prompt_dir: str | Path | None = None,
    *,
    brief: str = "",
    summary: str = "",
) -> str:
    """The main-window section of one topic result (``prompt_dir`` overrides the packaged one).

    Args:
        result: The topic's result (name and id).
        quoted: The quoted messages, in conversation order.
        language: Prompt language.
        prompt_dir: Prompt overrides.
        brief: The brief line, when the budget has room for it.
        summary: The summary, when the budget has room for it.
    """
    template = load_prompt("main_window_topic", language, prompt_dir)
    brief_label, summary_label = NOTE_LABELS.get(language, NOTE_LABELS["en"])
    lines = []
    if brief:
        lines.append(f"{brief_label}: {brief}")
    if summary:
        lines.append(f"{summary_label}: {summary}")
    block = template.render(
        name=result["name"] or result["topic_id"],
        ref=result["topic_id"],
        quoted_messages=render_quotes(quoted),
        notes="\n".join(lines),
    )
    return "\n".join(line for line in block.strip().split("\n") if line.strip()) + "\n"


def render_system_prompt(
    topic_blocks: Sequence[str], language: str, prompt_dir: str | Path | None = None
) -> str:
    """The main window's system prompt with the given topic blocks (best first)."""
    topic_context = (
        "\n".join(topic_blocks) or load_prompt("no_topics", language, prompt_dir).template
    )
    return load_prompt("main_window", language, prompt_dir).render(
        topic_context=topic_context.strip()
    )
