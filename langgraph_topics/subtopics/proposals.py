"""Subtopics a model splitter proposes for a large topic (seed 000 §4.5: "split by the splitter").

A model reads the topic's messages as a split of their own, with no topic to continue, and
says which new topics they form; it may group what the conversation interleaved. Its plan is
taken when it makes at least two parts and each fits the bound, every unit kept whole; otherwise
the topic is cut at its lulls (``segments``), as the native splitter's topics always are: it
kept them together because they are continuous, so it would keep them whole again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from langgraph_topics.errors import log_degraded
from langgraph_topics.roles.native import NativeSplitter
from langgraph_topics.roles.protocols import Splitter
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.tokens import TokenCounter

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProposedPart:
    """One subtopic of a model's plan: its messages in order, and the name and brief it gave."""

    messages: list[StoredMessage]
    name: str
    brief: str


def proposed_parts(
    splitter: Splitter,
    units: Sequence[Sequence[StoredMessage]],
    bound: int,
    count: TokenCounter,
) -> list[ProposedPart] | None:
    """The model splitter's subtopics of ``units``, or None (native splitter, or an unusable plan).

    A unit goes where its first assigned message goes; a unit the plan leaves out follows the
    unit before it. Every part must hold at most ``bound`` tokens.
    """
    if isinstance(splitter, NativeSplitter):
        return None
    try:
        plan = splitter.split(units, [])
    except Exception as error:
        log_degraded(log, "splitter failed on a large topic; cut at its lulls instead", error)
        return None
    specs = {topic["key"]: topic for topic in plan["new_topics"]}
    key_of = {
        message_id: assignment["new_key"]
        for assignment in plan["assignments"]
        if assignment["new_key"] in specs
        for message_id in assignment["message_ids"]
    }
    grouped: dict[str, list[StoredMessage]] = {}
    previous: str | None = None
    for unit in units:
        key = next((key_of[m["id"]] for m in unit if m["id"] in key_of), previous)
        if key is None:
            return None  # the plan starts with units it never placed
        grouped.setdefault(key, []).extend(unit)
        previous = key
    if len(grouped) < 2:
        return None
    if any(sum(count(m["content"]) for m in part) > bound for part in grouped.values()):
        return None
    return [
        ProposedPart(messages=part, name=specs[key]["name"], brief=specs[key]["brief"])
        for key, part in grouped.items()
    ]
