"""Quotes from the user's other threads in this turn's main window (user scope only).

The assembly leaves ``SCOPE_SHARE`` of the room the instructions and the recent messages leave
free (``reserve``); after the window is assembled, ``finish`` appends one block to the system
prompt, after the topic blocks (whose order by score is untouched, invariant 3): the best
quotes that fit, one escaped line each in the order they were sent, each naming its date and
thread, fenced in ``<q>…</q>``. Its cost is the system prompt's count with it minus without
it, so the window stays within the budget (invariant 6). No quote: nothing reserved, nothing
added, the window exactly as in thread scope.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from langgraph_topics.prompts.loader import PromptFile, load_prompt
from langgraph_topics.prompts.window_room import BlockAfterAssembly
from langgraph_topics.roles.llm.escaping import escape_label, quote_text
from langgraph_topics.scope.recall import ScopeQuote
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
        """Whether the other threads gave any quote."""
        return bool(self.quotes)

    def finish(self, context: AssembledContext, budget: int) -> AssembledContext:
        """``context`` with the block of the best quotes that fit under ``budget``."""
        if not self.quotes:
            return context
        # Another thread's messages are never in this thread's window: nothing to leave out.
        fresh = list(self.quotes[:HITS])
        room = budget - context["tokens"]
        before = self.counter(context["system_prompt"])
        template = load_prompt("scope_quotes", self.language, self.prompt_dir)
        chosen: list[ScopeQuote] = []
        prompt = context["system_prompt"]
        for quote in fresh:
            trial = _with_block(context["system_prompt"], template, [*chosen, quote])
            if self.counter(trial) - before <= room:
                chosen.append(quote)
                prompt = trial
        if not chosen:
            return context
        cost = self.counter(prompt) - before
        return {
            **context,
            "system_prompt": prompt,
            "tokens": context["tokens"] + cost,
            "sections": {**context["sections"], "scope": cost},
            "scope_quotes": [
                {"thread_id": q["thread_id"], "message_id": q["message"]["id"]}
                for q in _in_order(chosen)
            ],
            "budget": budget,
        }


def _with_block(system_prompt: str, template: PromptFile, quotes: Sequence[ScopeQuote]) -> str:
    lines = "\n".join(_quote_line(q) for q in _in_order(quotes))
    block = template.render(quotes=lines).strip()
    return f"{system_prompt}\n\n{block}"


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
