"""The card of a topic's brief: written with the brief, or built natively beside it.

A brief writer that writes cards (``CardBriefWriter``: the LLM back end) hands one back, which
is checked against the topic's messages here; any other writer (the native one, an
application's own) gets a native card of the topic's messages around the brief it wrote.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from langgraph_topics.roles.protocols import (
    BriefWriter,
    CardBriefWriter,
    IndexedBriefWriter,
    TopicInfo,
)
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.summaries.card import SummaryCard
from langgraph_topics.summaries.native import TokenCounter, native_card
from langgraph_topics.summaries.validation import CardError, validate_card

log = logging.getLogger(__name__)


def brief_card(
    messages: Sequence[StoredMessage], name: str, brief: str, count_tokens: TokenCounter
) -> SummaryCard:
    """The native card of a brief: facts of the topic's messages, the brief as its text."""
    return native_card(messages, brief, name=name, count_tokens=count_tokens)


def write_brief(
    writer: BriefWriter,
    topic: TopicInfo,
    messages: Sequence[StoredMessage],
    count_tokens: TokenCounter,
    stored_vectors: Callable[[Sequence[str]], Mapping[str, npt.NDArray[np.float32]]] | None = None,
) -> tuple[str, str, SummaryCard]:
    """``(name, brief, card)`` for a topic holding ``messages``.

    ``stored_vectors``: the message index's vectors by message id, for a writer that takes
    them (``IndexedBriefWriter``; the caller checks the embedders are the same).

    Raises:
        Exception: Whatever the writer raises (the caller keeps the previous brief).
    """
    if not isinstance(writer, CardBriefWriter):
        if stored_vectors is not None and isinstance(writer, IndexedBriefWriter):
            name, brief = writer.write_with_vectors(topic, messages, stored_vectors=stored_vectors)
        else:
            name, brief = writer.write(topic, messages)
        return name, brief, brief_card(messages, name, brief, count_tokens)
    name, brief, card = writer.write_with_card(topic, messages)
    try:
        checked = validate_card(card, {m["id"] for m in messages})
    except CardError as error:
        log.warning("brief card of %s refused (%s); a native card is used", topic["id"], error)
        return name, brief, brief_card(messages, name, brief, count_tokens)
    checked["text"] = brief
    return name, brief, checked
