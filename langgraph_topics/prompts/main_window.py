"""Render the main window's system prompt (seed 000 §5, §6.2)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from langgraph_topics.prompts.loader import load_prompt
from langgraph_topics.state.records import StoredMessage, TopicResult


def quote_message(message: StoredMessage) -> str:
    """One quoted message line: ``[id] role: content``."""
    return f"[{message['id']}] {message['role']}: {message['content']}"


def render_topic_block(
    result: TopicResult,
    quoted: Sequence[StoredMessage],
    language: str,
    prompt_dir: str | Path | None = None,
) -> str:
    """The main-window section of one topic result (``prompt_dir`` overrides the packaged one)."""
    return load_prompt("main_window_topic", language, prompt_dir).render(
        name=result["name"],
        brief=result["brief"],
        file=result["file"],
        quoted_messages="\n".join(quote_message(m) for m in quoted) or "-",
        summary=result["summary"] or "-",
    )


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
