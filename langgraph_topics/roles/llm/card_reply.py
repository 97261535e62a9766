"""The ``<card>`` part of a model's reply: a summary card in JSON, checked strictly.

A card that breaks the schema or cites ids the model was not shown is a format error (asked
again once, with the error, then the native back end serves); a card or summary that loops is
a :class:`~langgraph_topics.roles.llm.xml_reply.DegenerateReply` (the native back end serves at
once). A reply without a ``<card>`` is accepted: the node builds a native card from the
messages the reply references, so prompts written before cards keep working.
"""

from __future__ import annotations

from collections.abc import Collection

from langgraph_topics.roles.llm.xml_reply import DegenerateReply, ReplyFormatError, child_text
from langgraph_topics.summaries import CardError, SummaryCard, degeneration, parse_card
from langgraph_topics.summaries.degenerate import repetition

CARD_ELEMENT = "card"


def check_summary(summary: str) -> None:
    """Reject a summary that loops.

    Raises:
        DegenerateReply: The summary repeats itself (see ``summaries.degenerate``).
    """
    looped = repetition(summary)
    if looped is not None:
        raise DegenerateReply(f"the summary is degenerate: {looped}")


def reply_card(
    body: str, *, summary: str, known_ids: Collection[str], tokens_saved: int
) -> SummaryCard | None:
    """The checked card of a reply's root element ``body``, or None when it has none.

    Args:
        body: The root element's inner text.
        summary: The reply's natural-language summary (the card's ``text``).
        known_ids: The ids of the messages the model was shown.
        tokens_saved: What the summary saves, measured by the caller.

    Raises:
        ReplyFormatError: The card is not JSON, breaks the schema, or cites unknown ids.
        DegenerateReply: The card (or the summary) loops or has empty or repeated facts.
    """
    raw = child_text(body, CARD_ELEMENT)
    if raw is None:
        return None
    try:
        card = parse_card(raw, summary=summary, known_ids=known_ids, tokens_saved=tokens_saved)
    except CardError as error:
        raise ReplyFormatError(f"<{CARD_ELEMENT}>: {error}") from None
    problem = degeneration(card)
    if problem is not None:
        raise DegenerateReply(f"the card is degenerate: {problem}")
    return card
