"""The card a topic result carries: the back end's, checked, or a native one.

The node calls this whatever the back end: a card the back end wrote is checked against the
messages it was given (ids it was not given are refused, as the node refuses such references);
a back end without cards (an application's own, a prompt from before cards) gets a native card
of the messages it referenced, so every summary in the state has one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from langgraph_topics.state.records import StoredMessage
from langgraph_topics.summaries.card import SummaryCard, cited_ids
from langgraph_topics.summaries.native import TokenCounter, native_card
from langgraph_topics.summaries.validation import CardError, check_cited_ids, validate_card


def result_card(
    given: Mapping[str, Any] | None,
    *,
    summary: str,
    topic_name: str,
    given_ids: Callable[[Sequence[str]], Collection[str]],
    references: Sequence[str],
    count_tokens: TokenCounter,
    quoted_messages: Sequence[StoredMessage],
    topic_tokens: Callable[[], int],
) -> tuple[SummaryCard, str | None]:
    """The card of a topic result whose (possibly cut) summary is ``summary``.

    ``given_ids`` tells which of the ids a card cites are of messages the back end was given
    (its topic's and the unsplit ones; asked once for all of them), ``quoted_messages`` are
    the referenced messages in conversation order and ``topic_tokens`` counts the tokens of
    the whole topic (``summaries.topic_tokens``), only when the back end wrote no card: no
    pass over the topic's messages is needed here.

    Returns:
        The card (its ``text`` is ``summary``) and why the back end's card was refused, if it
        was.
    """
    refused: str | None = None
    if given is not None:
        try:
            card = validate_card(given)
            check_cited_ids(card, given_ids(cited_ids(card)))
        except CardError as error:
            refused = f"summary card refused: {error}"
        else:
            card["text"] = summary
            return card, refused
    quoted_tokens = sum(count_tokens(m["content"]) for m in quoted_messages)
    return (
        native_card(
            quoted_messages,
            summary,
            name=topic_name,
            count_tokens=count_tokens,
            source_tokens=max(0, topic_tokens() - quoted_tokens),
        ),
        refused,
    )
