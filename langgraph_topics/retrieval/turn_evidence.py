"""The evidence of one turn: the thread's messages scored for the newest user message."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from langgraph_topics.retrieval.evidence import Evidence
from langgraph_topics.retrieval.message_index import OverlayMessageIndex
from langgraph_topics.retrieval.period_evidence import asked_periods_of
from langgraph_topics.roles.native.text import message_text
from langgraph_topics.services import ThreadStores, TopicServices
from langgraph_topics.state.fan_out_memo import FanOutMemo
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.state.working_set import unsplit_messages

MEMO: FanOutMemo[Evidence] = FanOutMemo(entries=2)
"""Each topic window of a fan-out asked with the list it was handed: before the scorer's own
cache could answer, each located the list's messages in the store and keyed them again. A
fan-out's windows ask within moments of each other, so two lists are enough (two threads'
turns at once; the scorer answers the rest): evidence holds arrays the size of the thread."""


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
    if located is not None:
        # The assembler's own list: the windows' memo would miss; the scorer's cache answers.
        unsplit = [m for m in working if m["id"] not in located]
        periods = asked_periods_of(working, services.clock().date())
        return services.scorer.score(
            stores.message_index, question_of(working), unsplit, families, periods=periods
        )
    index = stores.message_index
    base = index.base if isinstance(index, OverlayMessageIndex) else index
    # What the scorer's own key reads of the index, so that a split in between is seen. The
    # fan-out hands its windows one families map, built for it and never changed: compared by
    # identity, not sorted again by each window (hundreds of subtopics in a long thread).
    version = (index.token, len(base), len(index))
    made_for = (services.scorer, stores.topic_store, index) + ((families,) if families else ())
    return MEMO.get(
        working, made_for, version, lambda records: _scored(services, stores, records, families)
    )


def _scored(
    services: TopicServices,
    stores: ThreadStores,
    working: Sequence[StoredMessage],
    families: Mapping[str, str],
) -> Evidence:
    unsplit = unsplit_messages(working, stores.topic_store)
    periods = asked_periods_of(working, services.clock().date())
    return services.scorer.score(
        stores.message_index, question_of(working), unsplit, families, periods=periods
    )
