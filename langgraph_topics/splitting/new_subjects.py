"""The index window's new-topic verdicts, honoured by the split (seed 000 §3).

When the index window finds no topic for a query (无匹配 → 确认为新话题), the turn records the
user message (``new_topic_hints``). The splitter, seeing that exchange later and among older
ones, may well attach it to the topic the conversation was on; the verdict overrules it: the
exchange opens a topic of its own. Whatever the back end, the plan is mended here, before the
briefs are written, so the new topic's brief is written from its own messages.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from langgraph_topics.roles.protocols import NewTopic
from langgraph_topics.state.records import StoredMessage

NEW_SUBJECT_KEY = "__new_subject_"
"""Prefix of the plan keys of the topics opened here; the brief writer names them."""

Destination = tuple[str, str]


def open_new_subjects(
    units: Sequence[Sequence[StoredMessage]],
    destinations: list[Destination],
    new_topics: dict[str, NewTopic],
    starts: Collection[str],
) -> list[str]:
    """Send each unit holding a hinted message to a new topic of its own, in place.

    A unit the plan already sends to a new topic that no earlier unit shares is left as it
    is: the splitter agreed. Only the hinted exchange moves; the units after it go where the
    splitter sent them. Returns the hinted ids the split honoured.
    """
    honoured: list[str] = []
    if not starts:
        return honoured
    for position, unit in enumerate(units):
        hinted = [m["id"] for m in unit if m["id"] in starts]
        if not hinted:
            continue
        honoured += hinted
        destination = destinations[position]
        if destination[0] == "new" and destination not in destinations[:position]:
            continue
        key = f"{NEW_SUBJECT_KEY}{position}__"
        destinations[position] = ("new", key)
        new_topics[key] = {"key": key, "name": "", "brief": ""}
    return honoured
