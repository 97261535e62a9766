"""Structured summary cards (seed 001 T3): typed facts that cite their source messages.

``card`` holds the records, ``validation`` the schema checks, ``degenerate`` the loop and
empty-fact detection, ``native`` the card built without a model, ``briefs`` the card of a
topic's brief. Only the first three are imported here: ``state.records`` imports this package,
and the other two import the state.
"""

from langgraph_topics.summaries.card import (
    CARD_VERSION,
    DecisionFact,
    EntityFact,
    SummaryCard,
    TopicFact,
    UnresolvedFact,
    card_facts,
    cited_ids,
    fact_text,
)
from langgraph_topics.summaries.degenerate import degeneration, repetition
from langgraph_topics.summaries.validation import (
    CardError,
    card_json_schema,
    fact_message_ids,
    parse_card,
    validate_card,
)

__all__ = [
    "CARD_VERSION",
    "CardError",
    "DecisionFact",
    "EntityFact",
    "SummaryCard",
    "TopicFact",
    "UnresolvedFact",
    "card_facts",
    "card_json_schema",
    "cited_ids",
    "degeneration",
    "fact_message_ids",
    "fact_text",
    "parse_card",
    "repetition",
    "validate_card",
]
