"""Archived topics a recall cue names: the one way back for them inside a turn (seed 000 §4.8).

Archived topics are not offered to normal activation. A user who says "remember what we said
about the sourdough starter?" asks for one explicitly, though, so a recall-cue search also
offers the archived topics whose *name* the message names: it shares a keyword with the name
(``keywords.extract_keywords``: a Latin word of 3+ letters, a Chinese 2-character piece, stop
words left out). Briefs are not enough: a brief describes a topic's content, which is what
every archived topic matches a little, and the seed keeps them out unless asked for.
"""

from __future__ import annotations

from collections.abc import Mapping

from langgraph_topics.keywords import extract_keywords
from langgraph_topics.state.records import TopicRecord


def named_archived(query: str, topics: Mapping[str, TopicRecord]) -> list[str]:
    """Archived topics whose name shares a keyword with ``query``, in registry order."""
    asked = set(extract_keywords(query))
    if not asked:
        return []
    return [
        topic_id
        for topic_id, record in topics.items()
        if record["status"] == "archived"
        and any(not k.isdigit() and k in asked for k in extract_keywords(record["name"]))
    ]
