"""Quotes from the user's other threads in this turn's main window (user scope only).

The assembly leaves ``SCOPE_SHARE`` of the room the instructions and the recent messages leave
free (``reserve``); after the window is assembled, ``finish`` appends one block to the system
prompt, after the topic blocks (whose order by score is untouched, invariant 3): the best
quotes that fit, one escaped line each in the order they were sent, each naming its date and
thread, fenced in ``<q>…</q>``; then, where a model topic window read the other threads'
topics (``topic_reading.py``), what it wrote of each relevant one in a second fenced block,
and the messages it named beyond the quotes. Its cost is the system prompt's count with it
minus without it, so the window stays within the budget (invariant 6). No quote and no
reading: nothing reserved, nothing added, the window exactly as in thread scope.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from langgraph_topics.prompts.loader import PromptFile, load_prompt
from langgraph_topics.prompts.window_room import BlockAfterAssembly
from langgraph_topics.roles.llm.escaping import escape_label, quote_text
from langgraph_topics.scope.recall import ScopeQuote
from langgraph_topics.scope.topic_reading import ScopeReading, ScopeTopic
from langgraph_topics.state.records import AssembledContext
from langgraph_topics.tokens import TokenCounter

SCOPE_SHARE = 0.25
"""Share of the room after the instructions and the recent messages the other threads' quotes
may take: this thread's own evidence keeps the rest."""
SCOPE_FLOOR = 0.08
"""Share of the room after the instructions they keep however long the recent messages are."""
HITS = 8
"""Quotes shown at most."""


@dataclass
class ScopeWindow(BlockAfterAssembly):
    """The other threads' quotes of one turn, and how they enter the window.

    Args:
        quotes: Candidates, best first (``recall.recall_from_threads``).
        language: Prompt language.
        prompt_dir: Prompt overrides.
        counter: Token counter.
    """

    quotes: Sequence[ScopeQuote]
    language: str
    prompt_dir: Path | None
    counter: TokenCounter

    ROOM_SHARE = SCOPE_SHARE
    ROOM_FLOOR = SCOPE_FLOOR

    def has_block(self) -> bool:
        """Whether the other threads gave any quote (or a topic is being read for the turn)."""
        return bool(self.quotes)

    def finish(self, context: AssembledContext, budget: int) -> AssembledContext:
        """``context`` with the block of the best quotes (and topic readings) that fit."""
        if not self.quotes:
            return context
        readings = self.quotes.ready_topics() if isinstance(self.quotes, ScopeReading) else []
        if not len(self.quotes) and not readings:  # a reading still running, or none found
            return context
        # Another thread's messages are never in this thread's window: nothing to leave out.
        candidates: list[ScopeQuote | ScopeTopic] = [
            *self.quotes[:HITS],
            *(r for r in readings if r["summary"]),
            *_named_beyond(readings, self.quotes[:HITS]),
        ]
        room = budget - context["tokens"]
        before = self.counter(context["system_prompt"])
        templates = (
            load_prompt("scope_quotes", self.language, self.prompt_dir),
            load_prompt("scope_topics", self.language, self.prompt_dir),
        )
        chosen: list[ScopeQuote | ScopeTopic] = []
        prompt = context["system_prompt"]
        for candidate in candidates:
            trial = _with_blocks(context["system_prompt"], templates, [*chosen, candidate])
            if self.counter(trial) - before <= room:
                chosen.append(candidate)
                prompt = trial
        if not chosen:
            return context
        cost = self.counter(prompt) - before
        quotes, summaries = _parts(chosen)
        finished: AssembledContext = {
            **context,
            "system_prompt": prompt,
            "tokens": context["tokens"] + cost,
            "sections": {**context["sections"], "scope": cost},
            "budget": budget,
        }
        if quotes:
            finished["scope_quotes"] = [
                {"thread_id": q["thread_id"], "message_id": q["message"]["id"]}
                for q in _in_order(quotes)
            ]
        # The topics a reading of which got in: by its summary, or by a message it named.
        read_in = dict.fromkeys(
            [(t["thread_id"], t["topic_id"]) for t in summaries]
            + [(q["thread_id"], q["topic_id"]) for q in quotes if "topic_id" in q]
        )
        if read_in:
            finished["scope_topics"] = [{"thread_id": t, "topic_id": i} for t, i in read_in]
        return finished


def _named_beyond(readings: Sequence[ScopeTopic], quoted: Sequence[ScopeQuote]) -> list[ScopeQuote]:
    """The messages the topic window named that the evidence's quotes do not hold, best first.

    The candidates after the quotes and the summaries: the evidence's originals enter first,
    then what the window wrote of each topic, then what else it pointed at.
    """
    shown = {q["message"]["id"] for q in quoted}
    named: list[ScopeQuote] = []
    for reading in readings:
        for quote in reading["quotes"]:
            if quote["message"]["id"] not in shown:
                shown.add(quote["message"]["id"])
                named.append(quote)
    return named[:HITS]


def _parts(chosen: Sequence[ScopeQuote | ScopeTopic]) -> tuple[list[ScopeQuote], list[ScopeTopic]]:
    """The chosen quotes and topic readings, apart, each in the order chosen."""
    quotes: list[ScopeQuote] = []
    summaries: list[ScopeTopic] = []
    for item in chosen:
        if "summary" in item:
            summaries.append(cast(ScopeTopic, item))
        else:
            quotes.append(item)
    return quotes, summaries


def _with_blocks(
    system_prompt: str,
    templates: tuple[PromptFile, PromptFile],
    chosen: Sequence[ScopeQuote | ScopeTopic],
) -> str:
    """The system prompt, then the quotes' block and the topic readings' block (when any)."""
    quotes, summaries = _parts(chosen)
    blocks = [system_prompt]
    if quotes:
        lines = "\n".join(_quote_line(q) for q in _in_order(quotes))
        blocks.append(templates[0].render(quotes=lines).strip())
    if summaries:
        lines = "\n".join(_topic_line(t) for t in summaries)
        blocks.append(templates[1].render(topics=lines).strip())
    return "\n\n".join(blocks)


def _topic_line(reading: ScopeTopic) -> str:
    """``(thread "T", topic "name") summary``, escaped, on one line."""
    thread = escape_label(reading["thread_id"])
    name = escape_label(reading["name"] or reading["topic_id"])
    return f"(thread “{thread}”, topic “{name}”) {quote_text(reading['summary'])}"


def _in_order(quotes: Sequence[ScopeQuote]) -> list[ScopeQuote]:
    """Conversation order: what was said first reads first, whatever thread it was in."""
    return sorted(quotes, key=lambda q: (q["message"].get("timestamp") or "", q["thread_id"]))


def _quote_line(quote: ScopeQuote) -> str:
    """``[YYYY-MM-DD HH:MM] (thread "T") speaker: text``, escaped, on one line."""
    message = quote["message"]
    sent = (message.get("timestamp") or "")[:16].replace("T", " ") or "undated"
    speaker = escape_label(message.get("name") or message["role"])
    thread = escape_label(quote["thread_id"])
    return f"[{sent}] (thread “{thread}”) {speaker}: {quote_text(message['content'])}"
