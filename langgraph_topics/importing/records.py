"""Check every record of an import before anything is written, and give id-less ones an id.

A record is a LangChain message or a mapping ``{id?, role, content, name?, timestamp?}``.
Checks: ``role`` is ``user`` or ``assistant``; ``content`` is a string; ``name`` and ``timestamp``
are strings when present (the timestamp in an accepted form, rewritten as ISO-8601); no text
holds a lone surrogate (UTF-8 cannot store it); no id is used twice. The first problem found
is raised as one line naming the record (``chat.jsonl:7: …`` or ``messages[6]: …``).

A record without an id gets ``imp-`` and a hash of its role, content, timestamp and its
position among identical id-less records of the input: the same input always yields the same
ids, whatever the thread, so importing it again adds nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC
from typing import Any, cast

from langchain_core.messages import AnyMessage, BaseMessage

from langgraph_topics.errors import InputError
from langgraph_topics.importing.timestamps import normalize_timestamp, parse_timestamp
from langgraph_topics.message_texts import text_problem
from langgraph_topics.state.messages import TIMESTAMP_KEY, to_langchain, to_stored
from langgraph_topics.state.records import StoredMessage

ROLES = ("user", "assistant")
"""Roles a mapping record may have."""


@dataclass(frozen=True)
class Origin:
    """Where an input record came from, as error messages name it."""

    prefix: str
    """Starts an error about the record itself: ``chat.jsonl:5`` or ``messages[4]``."""
    name: str
    """Names the record in an error about another one: ``line 5`` or ``messages[4]``."""


@dataclass(frozen=True)
class SourcedRecord:
    """An input record together with where it came from (a file line)."""

    record: object
    origin: Origin


@dataclass(frozen=True)
class CheckedMessage:
    """A record that passed every check: its message, with an id and an ISO-8601 time if any."""

    message: AnyMessage
    origin: Origin

    @property
    def id(self) -> str:
        """The message id (always set)."""
        return str(self.message.id)


def same_message(incoming: StoredMessage, existing: StoredMessage) -> bool:
    """Whether ``incoming`` repeats ``existing``: same role and text, same name and time if given.

    Only what ``incoming`` carries is compared: a message recorded without a time was stamped
    when it was stored, and that stamp does not make a re-import of it different.
    """
    if incoming["role"] != existing["role"] or incoming["content"] != existing["content"]:
        return False
    if "name" in incoming and incoming["name"] != existing.get("name"):
        return False
    if "timestamp" in incoming:
        return _instant(incoming["timestamp"]) == _instant(existing.get("timestamp"))
    return True


def _instant(value: object) -> object:
    """A comparable time (naive times count as UTC, as the stores read them); else the value."""
    parsed = parse_timestamp(value) if isinstance(value, str) else None
    if parsed is None:
        return value
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _checked_text(key: str, value: object) -> str:
    """A field's value if it is storable text; else a ``ValueError`` naming the field."""
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string, not {type(value).__name__}")
    problem = text_problem(value)
    if problem:
        raise ValueError(f"{key}: {problem}")
    return value


def _required_text(record: Mapping[str, Any], key: str) -> str:
    """The field's text; a ``ValueError`` when it is absent or null."""
    if key not in record:
        raise ValueError(f"{key} is missing")
    if record[key] is None:
        raise ValueError(f"{key} is null")
    return _checked_text(key, record[key])


def _optional_text(record: Mapping[str, Any], key: str) -> str | None:
    """The field's text; None when it is absent or null."""
    value = record.get(key)
    return None if value is None else _checked_text(key, value)


def _record_id(record: Mapping[str, Any]) -> str | None:
    """The record's id as given; None when absent.

    Ids are text: a number is refused rather than read as text, since ``1`` and ``"1"`` would
    then name one message (and JSON numbers lose digits past 2**53 in many writers).
    """
    value = record.get("id")
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        shown = f"{value:.40}" if isinstance(value, float) else f"{value}"[:40]
        raise ValueError(
            f"id must be a string, got the number {shown}; write it in quotes "
            f'("id": "{shown}") if that is the id'
        )
    if not isinstance(value, str) or not value:
        raise ValueError(f"id must be a non-empty string, not {value!r:.40}")
    return _checked_text("id", value)


def _from_mapping(record: Mapping[str, Any]) -> tuple[StoredMessage, str | None]:
    """The stored form of a mapping record (id still empty) and its given id."""
    role = record.get("role")
    if role not in ROLES:
        shown = "missing" if "role" not in record else f"{role!r:.40}"
        raise ValueError(f"role must be 'user' or 'assistant', got {shown}")
    given_id = _record_id(record)
    stored: StoredMessage = {"id": "", "role": role, "content": _required_text(record, "content")}
    name = _optional_text(record, "name")
    if name:
        stored["name"] = name
    timestamp = _optional_text(record, "timestamp")
    if timestamp is not None:
        stored["timestamp"] = normalize_timestamp(timestamp)
    return stored, given_id


def _from_message(message: BaseMessage) -> tuple[StoredMessage, str | None]:
    """The stored form of a LangChain message (id still empty) and its given id."""
    # to_stored wants an id; the real one is settled by the caller (given or derived).
    stored = to_stored(message.model_copy(update={"id": "pending"}))
    stored["id"] = ""
    _checked_text("content", stored["content"])
    if "name" in stored:
        _checked_text("name", stored["name"])
    timestamp = message.additional_kwargs.get(TIMESTAMP_KEY)
    if timestamp is not None:
        stored["timestamp"] = normalize_timestamp(_checked_text("timestamp", timestamp))
    return stored, message.id or None


def derived_id(stored: StoredMessage, occurrence: int) -> str:
    """The id of an id-less record: a hash of what it says and of its place among twins."""
    key = [stored["role"], stored["content"], stored.get("timestamp", ""), occurrence]
    digest = hashlib.sha1(json.dumps(key, ensure_ascii=True).encode("ascii")).hexdigest()
    return f"imp-{digest[:16]}"


def _as_message(item: object, stored: StoredMessage) -> AnyMessage:
    """The message to import: a LangChain message keeps its type and extras."""
    if not isinstance(item, BaseMessage):
        return to_langchain(stored)
    extras = dict(item.additional_kwargs)
    if "timestamp" in stored:
        extras[TIMESTAMP_KEY] = stored["timestamp"]
    # A copy keeps the concrete message type (HumanMessage, AIMessage…).
    return cast(
        AnyMessage, item.model_copy(update={"id": stored["id"], "additional_kwargs": extras})
    )


def _sourced(items: Iterable[object]) -> Iterable[SourcedRecord]:
    for index, item in enumerate(items):
        if isinstance(item, SourcedRecord):
            yield item
        else:
            yield SourcedRecord(item, Origin(f"messages[{index}]", f"messages[{index}]"))


def check_records(items: Iterable[object]) -> list[CheckedMessage]:
    """Check a whole input and return its messages, each with its id and origin.

    Args:
        items: LangChain messages, mappings, or either wrapped in a :class:`SourcedRecord`
            (whose origin then names it in errors).

    Raises:
        InputError: The first problem, as ``<origin>: <what is wrong>``; nothing is returned.
    """
    checked: list[CheckedMessage] = []
    in_order: list[tuple[CheckedMessage, StoredMessage]] = []
    first_use: dict[str, tuple[CheckedMessage, StoredMessage]] = {}
    twins: dict[tuple[str, str, str], int] = {}
    for sourced in _sourced(items):
        item, origin = sourced.record, sourced.origin
        try:
            if isinstance(item, BaseMessage):
                stored, given_id = _from_message(item)
            elif isinstance(item, Mapping):
                stored, given_id = _from_mapping(item)
            else:
                raise ValueError(f"expected a message or a mapping, got {type(item).__name__}")
        except ValueError as error:
            raise InputError(f"{origin.prefix}: {error}") from None
        if given_id is None:
            key = (stored["role"], stored["content"], stored.get("timestamp", ""))
            occurrence = twins.get(key, 0)
            twins[key] = occurrence + 1
            stored["id"] = derived_id(stored, occurrence)
        else:
            stored["id"] = given_id
        entry = CheckedMessage(_as_message(item, stored), origin)
        earlier = first_use.get(stored["id"])
        if earlier is not None:
            previous, previous_stored = earlier
            what = (
                "the same message listed twice"
                if same_message(stored, previous_stored)
                else "a different message"
            )
            raise InputError(
                f"{origin.prefix}: id {stored['id']!r} is already used by "
                f"{previous.origin.name} ({what}); ids must be unique"
            )
        first_use[stored["id"]] = (entry, stored)
        checked.append(entry)
        in_order.append((entry, stored))
    _check_tool_order(in_order)
    return checked


def _check_tool_order(entries: Sequence[tuple[CheckedMessage, StoredMessage]]) -> None:
    """Refuse a tool result that comes after a later user message than its call.

    Providers require a call's results before the next user message; a history that breaks
    this would put the result in one topic and its call in another (invariant 8).
    """
    waiting: dict[str, CheckedMessage] = {}
    closed: dict[str, tuple[CheckedMessage, CheckedMessage]] = {}
    for entry, stored in entries:
        if stored["role"] == "user":
            closed.update({call: (caller, entry) for call, caller in waiting.items()})
            waiting = {}
        for call in stored.get("tool_calls") or []:
            call_id = call.get("id")
            if isinstance(call_id, str) and call_id:
                waiting[call_id] = entry
        answered = stored.get("tool_call_id")
        if stored["role"] == "tool" and answered in closed:
            caller, user = closed[answered]
            raise InputError(
                f"{entry.origin.prefix}: the result of tool call {answered!r} "
                f"({caller.origin.name}) comes after a later user message ({user.origin.name}); "
                "a call's results must come before the next user message"
            )
