"""The evidence of one turn: the thread's messages scored for the newest user message."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from langgraph_topics.retrieval.evidence import Evidence
from langgraph_topics.roles.native.text import message_text
from langgraph_topics.services import ThreadStores, TopicServices
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.state.working_set import unsplit_messages


def question_of(working: Sequence[StoredMessage]) -> str:
    """The newest user message's text ('' when the working set has none)."""
    for message in reversed(working):
        if message["role"] == "user":
            return message_text(message)
    return ""


def turn_evidence(
    services: TopicServices,
    stores: ThreadStores,
    working: Sequence[StoredMessage],
    families: Mapping[str, str],
    located: Mapping[str, str] | None = None,
) -> Evidence:
    """Score every message of the thread (split and unsplit) for this turn's question.

    Every caller of one turn passes the same working set, the stores of its branch and the
    registry's subtopic families (``subtopics/families.py``), so the topic windows and the
    assembler share one computation. ``located``: the working-set messages a topic holds,
    when the caller has looked them up already (the assembler needs them too).
    """
    if located is None:
        unsplit = unsplit_messages(working, stores.topic_store)
    else:
        unsplit = [m for m in working if m["id"] not in located]
    return services.scorer.score(stores.message_index, question_of(working), unsplit, families)
