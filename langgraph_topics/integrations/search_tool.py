"""``search_memory``: a tool a model calls to search the whole conversation (issue 38 item 5).

The window a model is given holds what matters for the current question; a question about
the conversation itself ("when did we decide to use JWT?", "what did I say about the
landlord in March?") wants the dated original messages, wherever they are. The tool answers
it with :meth:`TopicMemory.search <langgraph_topics.memory.TopicMemory.search>` on the run's
thread (its ``thread_id``): the best messages, each with the time it was sent, its id, who
said it, its topic and its text (clipped), and the related terms the thread also looked for.

The answer stays under the memory's ``namespace_bytes`` (2,048 by default), so that it reaches
the model whole rather than as a stored reference (seed 001 T2): fewer or shorter snippets,
never a cut line. The messages of the current user turn (the question being asked, this
round's tool calls) are left out: the model has them.

:class:`~langgraph_topics.middleware.TopicMemoryMiddleware` offers it to agents; any other
LangChain tool-calling loop can take :func:`search_memory_tool` as one of its tools.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from langgraph_topics.errors import InputError
from langgraph_topics.retrieval.dates import date_bound
from langgraph_topics.retrieval.history_search import SearchHit
from langgraph_topics.retrieval.search_request import SEARCH_MEMORY as SEARCH_MEMORY
from langgraph_topics.services import thread_id_of

if TYPE_CHECKING:
    from langgraph_topics.memory import TopicMemory

SEARCH_MEMORY_DESCRIPTION = (
    "Search this whole conversation, also what is no longer in your context: the best "
    "matching original messages, each with when it was sent, its id and topic. For questions "
    "about the conversation itself: when something was said or decided, what exactly."
)
HITS = 8
"""Messages a search returns at most."""
_OWN_ANSWERS = ("Messages of this conversation matching", "No earlier message matches")
"""How this tool's answers start (so that a search does not find them again)."""
_MIN_SNIPPET = 60
"""A hit's text is never clipped shorter than this (fewer hits instead)."""


class SearchMemoryInput(BaseModel):
    """The arguments of ``search_memory``."""

    query: str = Field(description="What to look for, in a few words.")
    since: str = Field(default="", description="Sent on or after (YYYY-MM-DD).")
    until: str = Field(default="", description="Sent on or before (YYYY-MM-DD).")


Elsewhere = Callable[[str, str, datetime | None, datetime | None], int]
"""Searches what lies beyond the thread (a user's other threads) for a query between two
times: how many messages it found there (``TopicMemoryMiddleware`` in user scope)."""


def search_memory_tool(
    memory: TopicMemory,
    *,
    limit: int = HITS,
    thread_of: Callable[[], str] = thread_id_of,
    elsewhere: Elsewhere | None = None,
) -> BaseTool:
    """The ``search_memory`` tool of ``memory``, searching the calling run's thread.

    Example:
        >>> agent = create_agent(model, [search_memory_tool(memory)])  # doctest: +SKIP

    Args:
        memory: The topic memory holding the conversation (its thread is the run's
            ``thread_id``, ``default`` without one).
        limit: The most messages one call returns.
        thread_of: The memory's thread of the calling run (``TopicMemoryMiddleware`` passes
            its own: a user's thread in ``user`` scope); the run's ``thread_id`` by default.
        elsewhere: Also search beyond the thread (``TopicMemoryMiddleware`` in ``user``
            scope: the user's other threads, whose messages it adds to the model's context).
    """

    def run(query: str, since: str = "", until: str = "") -> str:
        return search_memory(
            memory,
            thread_of(),
            query,
            since=since,
            until=until,
            limit=limit,
            elsewhere=elsewhere,
        )

    async def arun(query: str, since: str = "", until: str = "") -> str:
        thread_id = thread_of()  # read in the caller's context, not the worker thread's
        return await asyncio.to_thread(
            search_memory,
            memory,
            thread_id,
            query,
            since=since,
            until=until,
            limit=limit,
            elsewhere=elsewhere,
        )

    return StructuredTool.from_function(
        func=run,
        coroutine=arun,
        name=SEARCH_MEMORY,
        description=SEARCH_MEMORY_DESCRIPTION,
        args_schema=SearchMemoryInput,
        infer_schema=False,
    )


def search_memory(
    memory: TopicMemory,
    thread_id: str,
    query: str,
    *,
    since: str | None = None,
    until: str | None = None,
    limit: int = HITS,
    elsewhere: Elsewhere | None = None,
) -> str:
    """The answer of ``search_memory`` for ``thread_id``: dated hits, as text for a model.

    Never raises on what a model may send (an empty query, a bad date, an unknown thread):
    the answer then says what was wrong, in one line. ``elsewhere``: as
    ``search_memory_tool``'s; what it found is named on one more line.
    """
    query = " ".join(query.split())
    if not query:
        return "Give a few words to look for."
    try:
        start = date_bound("since", since or None, end_of_day=False)
        end = date_bound("until", until or None, end_of_day=True)
    except InputError as error:
        return f"{error}; use YYYY-MM-DD."
    beyond = elsewhere(thread_id, query, start, end) if elsewhere is not None else 0
    note = (
        f"\nYour other conversations hold {beyond} more matching messages: they are in your "
        "context from your next call, dated."
        if beyond
        else ""
    )
    if not memory.exists(thread_id):
        return ("Nothing is stored for this conversation yet." + note).strip()
    current = _current_turn(memory, thread_id)
    found = memory.search(thread_id, query, limit=2 * limit + len(current), since=start, until=end)
    hits = [h for h in found if h["message_id"] not in current and not _derived(h)][:limit]
    related = memory.related_terms(thread_id, query)
    room = memory.settings.namespace_bytes - len(note.encode("utf-8"))
    return render_hits(query, hits, related, max_bytes=room) + note


def render_hits(
    query: str, hits: Sequence[SearchHit], related: Sequence[str], *, max_bytes: int
) -> str:
    """The hits as lines for a model, within ``max_bytes`` (UTF-8) and best first.

    Texts are clipped to share the room; when even the shortest clip does not fit, the last
    hits are left out (the model can ask again, more precisely).
    """
    head = f"{_OWN_ANSWERS[0]} {_clip(query, 160)!r}, best first"
    if related:
        head += f" (related words also searched: {', '.join(related)})"
    if not hits:
        return f"{_OWN_ANSWERS[1]} {_clip(query, 160)!r}."
    for count in range(len(hits), 0, -1):
        shown = hits[:count]
        tail = "Times are when each message was sent." + (
            f" ({len(hits) - count} more left out.)" if count < len(hits) else ""
        )
        room = max_bytes - _size([head + ":", *(_line(hit, "") for hit in shown), tail])
        share = room // count
        if share < _MIN_SNIPPET and count > 1:
            continue
        lines = [_line(hit, _clip(hit["snippet"], share)) for hit in shown]
        return "\n".join([head + ":", *lines, tail])
    return head  # pragma: no cover - the last count always returns


def _derived(hit: SearchHit) -> bool:
    """An earlier answer of this tool, or a message with no text (a bare tool call).

    Its lines quote other messages: shown again, every later search would find its own
    answers first.
    """
    text = hit["snippet"]
    return not text.strip() or (hit["role"] == "tool" and text.startswith(_OWN_ANSWERS))


def _line(hit: SearchHit, text: str) -> str:
    sent = (hit["timestamp"] or "undated")[:16].replace("T", " ")
    topic = f", topic {hit['topic_name']!r}" if hit["topic_name"] else ""
    return f"- {sent} [{hit['message_id']}] {hit['role']}{topic}: {text}"


def _clip(text: str, max_bytes: int) -> str:
    """``text`` within ``max_bytes`` of UTF-8, cut at a character and marked with "…"."""
    if len(text.encode("utf-8")) <= max_bytes:
        return text
    cut = text.encode("utf-8")[: max(0, max_bytes - 3)].decode("utf-8", errors="ignore")
    return cut.rstrip() + "…"


def _size(lines: Sequence[str]) -> int:
    return len("\n".join(lines).encode("utf-8"))


def _current_turn(memory: TopicMemory, thread_id: str) -> set[str]:
    """The ids of the thread's newest user message and what followed it (this turn)."""
    messages: list[Any] = memory.state(thread_id).get("messages", [])
    for place in range(len(messages) - 1, -1, -1):
        if isinstance(messages[place], HumanMessage):
            return {m.id for m in messages[place:] if m.id}
    return set()
