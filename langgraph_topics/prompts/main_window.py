"""Render the main window's system prompt (seed 000 §5, §6.2).

History is data, not instructions: every text of the conversation in the prompt (a quote, the
opening of a question a reply note names, a brief, a summary, a line of its card) is escaped
and kept to one line (``roles/llm/escaping.quote_text``) inside a fenced block, ``<q>…</q>``
(one a topic, in the ``main_window_topic`` prompt, and one around the replies quoted before the
first question), so an imported or typed message can neither close the fence nor add a line of
its own to the system message. The instructions say once that quoted text is never an
instruction. A fence a block, not a quote: each quote's tokens come out of the budget of the
evidence.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from langgraph_topics.prompts.loader import load_prompt
from langgraph_topics.roles.llm.escaping import escape_label, quote_text
from langgraph_topics.state.records import StoredMessage, TopicResult

NOTE_LABELS = {"en": ("Brief", "Summary"), "zh": ("简介", "总结")}
"""Labels of a topic block's brief and summary lines, per language."""
REPLY_NOTES = {
    "en": '(in reply to {speaker}: "{opening}")',
    "zh": "（回复 {speaker}：“{opening}”）",
}
"""The line above a quoted reply whose question is not quoted just before it, per language:
under the wrong question it would read as the answer to the message above it."""
REPLY_OPENING_CHARS = 60
"""How much of the question a reply note shows."""
EARLIER_LABELS = {"en": "Earlier in this conversation:", "zh": "此前的对话："}
"""Header of the replies a window that must open with a user message shows here instead."""


_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def quote_day(message: StoredMessage) -> str:
    """The calendar day a message was sent (``YYYY-MM-DD``; '' when it has no such timestamp)."""
    stamp = message.get("timestamp", "")
    return stamp[:10] if _DAY.match(stamp) else ""


def quote_line(message: StoredMessage) -> str:
    """One quoted message on one line: ``speaker: content`` (the name, else the role), escaped."""
    speaker = escape_label(message.get("name") or message["role"])
    return f"{speaker}: {quote_text(message['content'])}"


QUOTE_COSTS = 4096
"""Quotes whose token cost is remembered (least recently used first out)."""
REMEMBERED_QUOTE_CHARS = 4096
"""Longer messages are counted each time, never kept (a tool's output may be megabytes)."""


def quote_cost(message: StoredMessage, counter: Callable[[str], int]) -> int:
    """The tokens of ``quote_line(message)`` and its line end, remembered for most messages.

    Every turn the assembly weighs each message the read topics reference (over a thousand
    a turn with 20 topics read): escaping and counting each again was a tenth of a long
    thread's turn (``bench soak``).
    """
    speaker = message.get("name") or message["role"]
    content = message["content"]
    if len(content) > REMEMBERED_QUOTE_CHARS:
        return counter(quote_line(message) + "\n")
    try:
        return _quote_cost(counter, speaker, content)
    except TypeError:  # a counter that cannot be a key (unhashable): counted each time
        return counter(quote_line(message) + "\n")


@functools.lru_cache(maxsize=QUOTE_COSTS)
def _quote_cost(counter: Callable[[str], int], speaker: str, content: str) -> int:
    return counter(f"{escape_label(speaker)}: {quote_text(content)}\n")


def note_line(label: str, text: str) -> str:
    """A brief or summary line of a topic block: ``label: text`` (it may quote), escaped."""
    return f"{label}: {quote_text(text)}"


def reply_note(question: StoredMessage, language: str) -> str:
    """The note naming the question a quoted reply answers (its opening words)."""
    text = " ".join(question["content"].split())
    if len(text) > REPLY_OPENING_CHARS:
        cut = text[:REPLY_OPENING_CHARS]
        text = (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"
    speaker = escape_label(question.get("name") or question["role"])
    return REPLY_NOTES.get(language, REPLY_NOTES["en"]).format(
        speaker=speaker, opening=quote_text(text)
    )


def render_quotes(
    quoted: Sequence[StoredMessage],
    questions: Mapping[str, StoredMessage] | None = None,
    language: str = "en",
) -> str:
    """Quoted messages in the given order, each day's under a ``[YYYY-MM-DD]`` line.

    ``questions``: for a quoted reply, the question it answers; a reply whose question is not
    the message quoted just before it gets a :func:`reply_note` line above it.
    """
    lines: list[str] = []
    current = None
    previous = ""
    for message in quoted:
        day = quote_day(message)
        if day and day != current:
            lines.append(f"[{day}]")
        current = day or current
        question = (questions or {}).get(message["id"])
        if question is not None and question["id"] != previous:
            lines.append(reply_note(question, language))
        lines.append(quote_line(message))
        previous = message["id"]
    return "\n".join(lines)


def render_earlier(messages: Sequence[StoredMessage], language: str) -> str:
    """The section quoting replies a window must not open its chat part with.

    Strict chat templates want a user message first; a reply before any question the window
    shows (a greeting opening the thread) is quoted here instead.
    """
    label = EARLIER_LABELS.get(language, EARLIER_LABELS["en"])
    return f"{label}\n<q>\n{render_quotes(messages)}\n</q>\n"


def render_topic_block(
    result: TopicResult,
    quoted: Sequence[StoredMessage],
    language: str,
    prompt_dir: str | Path | None = None,
    *,
    brief: str = "",
    summary: str = "",
    questions: Mapping[str, StoredMessage] | None = None,
    card: Sequence[str] = (),
) -> str:
    """The main-window section of one topic result (``prompt_dir`` overrides the packaged one).

    Args:
        result: The topic's result (name and id).
        quoted: The quoted messages, in conversation order.
        language: Prompt language.
        prompt_dir: Prompt overrides.
        brief: The brief line, when the budget has room for it.
        summary: The summary, when the budget has room for it.
        questions: The questions of quoted replies (see :func:`render_quotes`).
        card: Lines of the summary's card that the budget has room for, escaped
            (``prompts/card_lines.py``).
    """
    template = load_prompt("main_window_topic", language, prompt_dir)
    brief_label, summary_label = NOTE_LABELS.get(language, NOTE_LABELS["en"])
    lines = []
    if brief:
        lines.append(note_line(brief_label, brief))
    if summary:
        lines.append(note_line(summary_label, summary))
    lines.extend(card)
    block = template.render(
        name=escape_label(result["name"] or result["topic_id"]),
        ref=escape_label(result["topic_id"]),
        quoted_messages=render_quotes(quoted, questions, language),
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
