"""The responder's ``search_memory`` call: its arguments cleaned, then checked before a search.

A model writes the arguments, so they are untrusted text: control characters (a NUL, an
escape sequence, a bidi override) are removed, whitespace is collapsed, and what is kept in
the checkpoint is bounded (a query of a megabyte is recorded by its first characters and its
length). The check turns what cannot be searched into one line the model can act on.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from langgraph_topics.errors import InputError
from langgraph_topics.retrieval.dates import date_bound
from langgraph_topics.state.records import MemorySearchRequest

SEARCH_MEMORY = "search_memory"
"""The tool's name: the graph's responder and agents (the middleware) are offered it."""
MAX_QUERY_CHARS = 300
"""A longer query is refused: "a few words" is what the tool asks for."""
MAX_DATE_CHARS = 40
"""A date argument is kept up to this long (an ISO time with an offset is 25 characters)."""

Problem = Literal["empty", "long", "date"]


@dataclass(frozen=True)
class CheckedSearch:
    """A search that can run: the query and the bounds of the period."""

    query: str
    since: datetime | None
    until: datetime | None


@dataclass(frozen=True)
class RefusedSearch:
    """A search that cannot run, and what to tell the model (``detail``: the number or field)."""

    problem: Problem
    detail: str = ""


def clean_text(text: object) -> str:
    """``text`` as one line: control and format characters gone, whitespace collapsed."""
    kept = "".join(
        " " if unicodedata.category(c).startswith(("C", "Z")) else c for c in str(text or "")
    )
    return " ".join(kept.split())


def search_request(args: Mapping[str, object]) -> MemorySearchRequest:
    """The request of a ``search_memory`` call's arguments, cleaned and bounded."""
    query = clean_text(args.get("query"))
    request: MemorySearchRequest = {"query": query[: MAX_QUERY_CHARS + 1]}
    if len(query) > MAX_QUERY_CHARS:
        request["query_chars"] = len(query)
    since = clean_text(args.get("since"))[: MAX_DATE_CHARS + 1]
    until = clean_text(args.get("until"))[: MAX_DATE_CHARS + 1]
    if since:
        request["since"] = since
    if until:
        request["until"] = until
    return request


def checked_search(request: MemorySearchRequest) -> CheckedSearch | RefusedSearch:
    """The search ``request`` asks for, or why it cannot run."""
    query = request["query"]
    if not query:
        return RefusedSearch("empty")
    if "query_chars" in request or len(query) > MAX_QUERY_CHARS:
        return RefusedSearch("long", f"{request.get('query_chars', len(query)):,}")
    bounds: dict[str, datetime | None] = {}
    for key, value in (("since", request.get("since")), ("until", request.get("until"))):
        if value is not None and len(value) > MAX_DATE_CHARS:
            return RefusedSearch("date", key)
        try:
            bounds[key] = date_bound(key, value, end_of_day=key == "until")
        except InputError:
            return RefusedSearch("date", key)
    return CheckedSearch(query, bounds["since"], bounds["until"])
