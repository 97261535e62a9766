"""Validate a summary card against its schema and against the messages it may cite.

One schema, derived by pydantic from the ``TypedDict``s of :mod:`~.card`, serves both: the
validation here and the JSON schema that :func:`card_json_schema` hands to anyone who wants it
(a model's structured-output mode, a reviewer). Errors are one line naming the field
(``decisions.0.message_ids: ...``), so the same text can go back to a model on a format retry.
"""

from __future__ import annotations

import json
from collections.abc import Container, Mapping
from functools import lru_cache
from typing import Any, cast

from pydantic import TypeAdapter, ValidationError

from langgraph_topics.errors import InputError
from langgraph_topics.summaries.card import CARD_VERSION, SummaryCard, card_facts

MAX_ERRORS_SHOWN = 3


class CardError(ValueError):
    """A card that does not follow the schema, or cites messages it was not given."""


@lru_cache(maxsize=1)
def _adapter() -> TypeAdapter[SummaryCard]:
    return TypeAdapter(SummaryCard)


def card_json_schema() -> dict[str, Any]:
    """The card's JSON schema (draft 2020-12, as pydantic writes it)."""
    return _adapter().json_schema()


def _describe(error: ValidationError) -> str:
    problems = []
    for detail in error.errors()[:MAX_ERRORS_SHOWN]:
        where = ".".join(str(part) for part in detail["loc"]) or "card"
        problems.append(f"{where}: {detail['msg']}")
    more = error.error_count() - MAX_ERRORS_SHOWN
    return "; ".join(problems) + (f" (+{more} more)" if more > 0 else "")


def validate_card(raw: Mapping[str, Any], known_ids: Container[str] | None = None) -> SummaryCard:
    """The card ``raw`` as a checked :class:`SummaryCard`.

    Args:
        raw: A decoded card (keys the schema does not know are dropped).
        known_ids: The ids the card may cite (the messages its writer was given); ``None``
            skips that check.

    Raises:
        CardError: A missing field, a wrong type, a fact without message ids, or (with
            ``known_ids``) ids that are not among them; the message names them.
    """
    try:
        card = _adapter().validate_python(raw, strict=False)
    except ValidationError as error:
        raise CardError(_describe(error)) from None
    if known_ids is not None:
        check_cited_ids(card, known_ids)
    return card


def check_cited_ids(card: SummaryCard, known_ids: Container[str]) -> None:
    """Refuse a checked card that cites ids not among ``known_ids``.

    Raises:
        CardError: Naming the unknown ids and the facts citing them.
    """
    unknown: dict[str, list[str]] = {}
    for field_name, index, fact in card_facts(card):
        for message_id in fact["message_ids"]:
            if message_id not in known_ids:
                unknown.setdefault(message_id, []).append(f"{field_name}.{index}")
    if unknown:
        named = ", ".join(f"{i} ({' '.join(where[:2])})" for i, where in unknown.items())
        raise CardError(f"message ids not in the input: {named}")


def parse_card(
    text: str,
    *,
    summary: str,
    known_ids: Container[str],
    tokens_saved: int,
    source: str = "llm",
) -> SummaryCard:
    """A card from a model's JSON (the facts), completed with what the caller knows.

    The model writes ``topics``, ``decisions``, ``unresolved`` and ``entities``; the version,
    the natural-language ``summary``, the measured ``tokens_saved`` and the source are added
    here (a model's own estimate of saved tokens would be a guess).

    Raises:
        CardError: Not a JSON object, or what :func:`validate_card` rejects.
    """
    try:
        decoded = json.loads(_strip_fence(text))
    except ValueError as error:
        raise CardError(f"the card is not valid JSON: {error}") from None
    if not isinstance(decoded, dict):
        raise CardError(f"the card must be a JSON object, got {type(decoded).__name__}")
    completed = {
        **cast(dict[str, Any], decoded),
        "version": CARD_VERSION,
        "text": summary,
        "tokens_saved": max(0, tokens_saved),
        "source": source,
    }
    return validate_card(completed, known_ids)


def _strip_fence(text: str) -> str:
    """The JSON inside a Markdown code fence, which models add unasked."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0]
    return stripped.strip()


def fact_message_ids(fact: object) -> list[str]:
    """The message ids a fact cites: a fact of a card, a list of ids, or one id.

    Raises:
        InputError: Anything else, or no ids at all (one line saying what was given).
    """
    raw: object = fact
    if isinstance(fact, Mapping):
        if "message_ids" not in fact:
            raise InputError(f"not a card fact (no message_ids): {dict(fact)!r:.120}")
        raw = fact["message_ids"]
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list | tuple) or not all(isinstance(i, str) and i for i in raw):
        raise InputError(f"message ids must be non-empty strings, got {raw!r:.120}")
    if not raw:
        raise InputError("the fact cites no message ids")
    return list(dict.fromkeys(raw))
