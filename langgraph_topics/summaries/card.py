"""The structured summary card (seed 001 T3): typed facts, each citing its source messages.

A card travels with every summary the system writes (a topic window's summary, a topic's
brief): ``topics``, ``decisions`` (each with its reason), ``unresolved`` items and key
``entities`` (files among them), ``tokens_saved`` and the natural-language ``text``. Every fact
names the message ids it came from, so ``TopicMemory.expand`` can bring back the originals.

The records are ``TypedDict``s like every other record of the package (they serialise into
checkpoints and JSONL lines as they are); the constraints pydantic checks (and the JSON schema
it derives, see :func:`~langgraph_topics.summaries.validation.card_json_schema`) ride along as
``Annotated`` metadata. This module imports nothing else of the package: ``state.records``
imports it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Literal

from pydantic import Field

# typing_extensions' TypedDict: on Python < 3.12 pydantic rejects typing.TypedDict.
from typing_extensions import TypedDict

CARD_VERSION = 1

MessageIds = Annotated[list[str], Field(min_length=1)]
"""The ids of the messages a fact came from: at least one."""

EntityKind = Literal["file", "entity"]
CardSource = Literal["native", "llm"]


class TopicFact(TypedDict):
    """A subject the summarised messages talk about."""

    name: str
    message_ids: MessageIds


class DecisionFact(TypedDict):
    """Something decided, with the reason given for it."""

    what: str
    why: str
    """The reason as the messages state it (natively: the reason clause, else the question the
    decision answers)."""
    message_ids: MessageIds


class UnresolvedFact(TypedDict):
    """A question or an item left open."""

    item: str
    message_ids: MessageIds


class EntityFact(TypedDict):
    """A key entity: a file, a path, an identifier, a named thing."""

    name: str
    kind: EntityKind
    message_ids: MessageIds


class SummaryCard(TypedDict):
    """A summary as structured, citable facts plus its natural-language text."""

    version: int
    text: str
    """The natural-language summary: what the main window shows."""
    topics: list[TopicFact]
    decisions: list[DecisionFact]
    unresolved: list[UnresolvedFact]
    entities: list[EntityFact]
    tokens_saved: Annotated[int, Field(ge=0)]
    """Tokens of the messages the text stands for, less the text's own (never negative)."""
    source: CardSource
    """Who wrote the card: the native back end or a model."""


Fact = TopicFact | DecisionFact | UnresolvedFact | EntityFact

FACT_FIELDS = ("topics", "decisions", "unresolved", "entities")
"""The card's lists of facts, in the order they are shown."""

FACT_TEXT_KEYS = {"topics": "name", "decisions": "what", "unresolved": "item", "entities": "name"}
"""The key holding each kind of fact's own text."""


def card_facts(card: SummaryCard) -> Iterator[tuple[str, int, Fact]]:
    """Every fact of the card as ``(field, index, fact)``, in the order they are shown."""
    for field_name in FACT_FIELDS:
        facts: list[Fact] = list(card[field_name])  # type: ignore[literal-required]
        for index, fact in enumerate(facts):
            yield field_name, index, fact


def fact_text(field_name: str, fact: Fact) -> str:
    """The text a fact says (a decision's with its reason)."""
    text = str(fact.get(FACT_TEXT_KEYS[field_name], ""))
    if field_name == "decisions":
        return f"{text} ({fact.get('why', '')})"
    return text


def cited_ids(card: SummaryCard) -> list[str]:
    """Every message id the card cites, each once, in the order first cited."""
    return list(dict.fromkeys(i for _, _, fact in card_facts(card) for i in fact["message_ids"]))
