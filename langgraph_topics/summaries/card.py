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

from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal, NotRequired

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


class DayDigest(TypedDict):
    """One day of a topic compressed by the review (seed 000 §4.8 "进一步的总结压缩")."""

    day: str
    """The calendar day the messages were said on (``YYYY-MM-DD``; undated ones: the review's)."""
    text: str
    """The day's messages compressed: what a later reader of the card sees of that day."""
    message_ids: MessageIds
    """The messages the digest stands for (still all in the topic's file)."""
    tokens_saved: Annotated[int, Field(ge=0)]


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
    days: NotRequired[list[DayDigest]]
    """A brief's card only: the topic's days as the reviews compressed them, oldest first."""


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


def with_days_of(previous: Mapping[str, Any] | None, card: Mapping[str, Any]) -> dict[str, Any]:
    """``card`` carrying ``previous``'s day digests when it has none of its own.

    Only a review writes day digests; every other brief write (a split, a subtopic division)
    builds its card afresh from the messages and would drop them. The stores apply this when
    they read a brief record, so the digests live on across later briefs without any writer
    having to know of them, and replaying a topic's records always gives the same card.
    """
    if "days" in card or previous is None or not previous.get("days"):
        return dict(card)
    return {**card, "days": list(previous["days"])}
