"""Assemble the main window within the budget (seed 000 §5)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from langgraph_topics.prompts.language import detect_language
from langgraph_topics.prompts.main_window import render_system_prompt, render_topic_block
from langgraph_topics.services import TopicContext, services_of, thread_id_of
from langgraph_topics.state.records import (
    AssembledContext,
    StoredMessage,
    TopicResult,
    TrimRecord,
    TurnEvent,
)
from langgraph_topics.state.schema import TopicState
from langgraph_topics.state.working_set import located_in_topics, recent_messages, stored_view
from langgraph_topics.tokens import TokenCounter, message_tokens

TRUNCATION_MARK = " …[shortened to fit the window; the full text is kept]"
BRIEF_FLOOR_CHARS = 120
"""A brief cut to fit the budget keeps its first line, at most this long."""


@dataclass
class _TopicPart:
    result: TopicResult
    quoted: list[StoredMessage]


@dataclass
class _Window:
    """The parts of a main window while it is being fitted to the budget."""

    topics: list[_TopicPart]
    unsplit: list[StoredMessage]
    recent: list[StoredMessage]
    trimmed: list[TrimRecord] = field(default_factory=list)
    prompt_dir: Path | None = None
    _costs: dict[tuple[str, str], int] = field(default_factory=dict)

    def chat_tokens(self, counter: TokenCounter) -> int:
        """Tokens of the unsplit and recent messages, each message counted once per text.

        The trim loop asks after every step, and most steps only touch the topic context.
        """
        total = 0
        for message in [*self.unsplit, *self.recent]:
            key = (message["id"], message["content"])
            if key not in self._costs:
                self._costs[key] = message_tokens(message, counter)
            total += self._costs[key]
        return total


def _system_prompt(window: _Window, language: str) -> str:
    blocks = [
        render_topic_block(p.result, p.quoted, language, window.prompt_dir) for p in window.topics
    ]
    return render_system_prompt(blocks, language, window.prompt_dir)


def _total(window: _Window, language: str, counter: TokenCounter) -> int:
    return counter(_system_prompt(window, language)) + window.chat_tokens(counter)


def _shorten(message: StoredMessage, excess: int, counter: TokenCounter) -> StoredMessage:
    """Cut the end of a message's text so it takes ``excess`` fewer tokens (or all it can)."""
    text = message["content"]
    target = max(0, counter(text) - excess - counter(TRUNCATION_MARK))
    low, high = 0, len(text)
    while low < high:  # longest prefix within the target
        middle = (low + high + 1) // 2
        if counter(text[:middle]) <= target:
            low = middle
        else:
            high = middle - 1
    return {**message, "content": text[:low] + TRUNCATION_MARK}


def _trim_topics(window: _Window, counter: TokenCounter) -> bool:
    """Give up the least valuable piece of topic context, lowest-scoring topic first.

    Quoted messages are the exact evidence, so every summary goes first, then every brief is cut
    to its first line, then quotes (each topic's least relevant first), then whole results.
    """
    for part in reversed(window.topics):
        if part.result["summary"]:
            window.trimmed.append(
                {
                    "kind": "topic_summary",
                    "id": part.result["topic_id"],
                    "tokens": counter(part.result["summary"]),
                }
            )
            part.result = {**part.result, "summary": ""}
            return True
    for part in reversed(window.topics):
        brief = part.result["brief"]
        short = clip_line(brief)
        if short != brief:
            window.trimmed.append(
                {
                    "kind": "topic_brief",
                    "id": part.result["topic_id"],
                    "tokens": counter(brief) - counter(short),
                }
            )
            part.result = {**part.result, "brief": short}
            return True
    for part in reversed(window.topics):
        if part.quoted:
            dropped = part.quoted.pop()
            window.trimmed.append(
                {
                    "kind": "referenced_message",
                    "id": dropped["id"],
                    "tokens": message_tokens(dropped, counter),
                }
            )
            return True
    if window.topics:
        part = window.topics.pop()
        window.trimmed.append(
            {
                "kind": "topic_result",
                "id": part.result["topic_id"],
                "tokens": counter(part.result["name"]),
            }
        )
        return True
    return False


def clip_line(text: str, limit: int = BRIEF_FLOOR_CHARS) -> str:
    """The first line of a text, at most ``limit`` characters."""
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _trim_step(window: _Window, excess: int, counter: TokenCounter) -> bool:
    """Give up one piece, in the order of least value; False when nothing is left to give.

    Order: topic context (see ``_trim_topics``), then older unsplit messages (oldest first),
    then the recent messages are shortened (oldest first; they stay in the window by id, their
    full text stays stored).
    """
    if _trim_topics(window, counter):
        return True
    if window.unsplit:
        dropped = window.unsplit.pop(0)
        window.trimmed.append(
            {
                "kind": "unsplit_message",
                "id": dropped["id"],
                "tokens": message_tokens(dropped, counter),
            }
        )
        return True
    for index, message in enumerate(window.recent):
        if message["content"] and not message["content"].endswith(TRUNCATION_MARK):
            shortened = _shorten(message, excess, counter)
            window.recent[index] = shortened
            saved = message_tokens(message, counter) - message_tokens(shortened, counter)
            window.trimmed.append(
                {"kind": "recent_truncated", "id": message["id"], "tokens": saved}
            )
            return True
    return False


def assemble_window(
    working: Sequence[StoredMessage],
    located: dict[str, str],
    results: Sequence[TopicResult],
    lookup: dict[str, StoredMessage],
    *,
    budget: int,
    keep_recent: int,
    reference_threshold: float,
    language: str,
    counter: TokenCounter,
    prompt_dir: Path | None = None,
) -> AssembledContext:
    """Build the main window: topic results by score, unsplit messages, the recent ones.

    No message appears twice: a quoted message already in the chat part is not quoted again,
    and one quoted by two topics is quoted by the higher-scoring one.
    """
    recent = recent_messages(working, keep_recent)
    older = working[: len(working) - len(recent)]
    unsplit = [m for m in older if m["id"] not in located]
    placed = {m["id"] for m in [*unsplit, *recent]}
    ranked = sorted(
        (
            r
            for r in results
            if r["relevance_score"] >= reference_threshold
            and (r["referenced_message_ids"] or r["summary"])
        ),
        key=lambda r: (-r["relevance_score"], r["topic_id"]),
    )
    parts: list[_TopicPart] = []
    for result in ranked:
        quoted = [
            lookup[i] for i in result["referenced_message_ids"] if i in lookup and i not in placed
        ]
        placed.update(m["id"] for m in quoted)
        parts.append(_TopicPart(result, quoted))
    window = _Window(parts, list(unsplit), list(recent), prompt_dir=prompt_dir)

    total = _total(window, language, counter)
    while total > budget and _trim_step(window, total - budget, counter):
        total = _total(window, language, counter)

    system_prompt = _system_prompt(window, language)
    base_tokens = counter(render_system_prompt([], language, prompt_dir))
    system_tokens = counter(system_prompt)
    unsplit_tokens = sum(message_tokens(m, counter) for m in window.unsplit)
    recent_tokens = sum(message_tokens(m, counter) for m in window.recent)
    referenced = [m for part in window.topics for m in part.quoted]
    chat = [*window.unsplit, *window.recent]
    return {
        "messages": chat,
        "referenced_messages": referenced,
        "message_ids": [m["id"] for m in [*referenced, *chat]],
        "recent_ids": [m["id"] for m in recent],
        "system_prompt": system_prompt,
        "tokens": system_tokens + unsplit_tokens + recent_tokens,
        "budget": budget,
        "sections": {
            "system": base_tokens,
            "topics": system_tokens - base_tokens,
            "unsplit": unsplit_tokens,
            "recent": recent_tokens,
        },
        "topic_ids": [part.result["topic_id"] for part in window.topics],
        "trimmed": window.trimmed,
    }


def assemble(state: TopicState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Assemble this turn's main window from the topic results and the working set."""
    services = services_of(runtime)
    settings = services.settings
    store = services.stores(thread_id_of(runtime)).topic_store
    working = stored_view(state["messages"])
    results = list((state.get("topic_results") or {}).values())
    wanted = [i for r in results for i in r["referenced_message_ids"]]
    context = assemble_window(
        working,
        located_in_topics((m["id"] for m in working), store),
        results,
        store.get_messages(wanted),
        budget=settings.budget_tokens,
        keep_recent=settings.keep_recent,
        reference_threshold=settings.reference_threshold,
        language=detect_language((m["content"] for m in working[-10:]), settings.language),
        counter=services.token_counter,
        prompt_dir=settings.prompt_dir,
    )
    update: dict[str, Any] = {"context": context}
    if context["trimmed"]:
        kinds = sorted({t["kind"] for t in context["trimmed"]})
        event: TurnEvent = {
            "kind": "trimmed",
            "detail": f"{len(context['trimmed'])} pieces left"
            f" out to fit {settings.budget_tokens} tokens ({', '.join(kinds)})",
        }
        update["events"] = [event]
    return update
