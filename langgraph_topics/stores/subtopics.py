"""Topics split into subtopics: what a ``subtopics`` record means to both stores.

A split (seed 000 §4.5, §8) moves no message and copies none, as a merge does not
(``merged_topics``). The stores first write each child's ``topic`` header (with its
``parent_id`` and ``"subtopic": true``), then one record in the parent's own stream::

    {"type": "subtopics", "split_at": ...,
     "children": [{"id": <child id>, "messages": [<ids, in the parent's order>],
                   "days": [<YYYY-MM-DD>, ...]}, ...]}

in one line (one item), so a crash leaves the split whole or absent. From that record on, each
listed message belongs to its child: the child's messages are its part, in the parent's order,
then whatever was appended to the child itself; the parent keeps only what is appended to it
afterwards. Every id stays stored exactly once (invariant 1). ``days`` are the calendar days of
the part's messages (a message without a readable timestamp counts on the day of the split), so
the time index needs no message text on open. A child can be split again (nested subtopics):
what it holds is its part plus its own appends.

A crash between the headers and the record leaves children that no record names. Marked as a
split's and holding no message, they are left out when the store is opened (an *interrupted
split*): the split can simply be made again. Being numbered like every record, the record
follows the checkpoint's ``store_ranges``: a branch that never recorded it sees the parent whole
and no children.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph_topics.state.records import StoredMessage, SubtopicPart

SUBTOPICS = "subtopics"
"""The record type of a split."""
SUBTOPIC_MARK = "subtopic"
"""The key (true) of a child's ``topic`` header: a split made it."""


def made_by_split(header: Mapping[str, Any]) -> bool:
    """Whether a ``topic`` header is a split's child's (``SUBTOPIC_MARK``)."""
    return header.get(SUBTOPIC_MARK) is True


@dataclass(frozen=True)
class SplitChild:
    """One child a ``subtopics`` record names: its id, its messages, their days."""

    id: str
    messages: tuple[str, ...]
    days: tuple[str, ...]


def subtopics_record(children: Sequence[SplitChild], split_at: str) -> dict[str, Any]:
    """The record handing a topic's messages to its children (stored in the parent's stream)."""
    return {
        "type": SUBTOPICS,
        "children": [
            {"id": child.id, "messages": list(child.messages), "days": list(child.days)}
            for child in children
        ],
        "split_at": split_at,
    }


def split_children(record: Mapping[str, Any]) -> list[SplitChild] | None:
    """The children a ``subtopics`` record names; None when it is damaged (then it is skipped)."""
    children = record.get("children")
    if not isinstance(children, list) or not children:
        return None
    found: list[SplitChild] = []
    for child in children:
        if not isinstance(child, dict):
            return None
        child_id, messages, days = child.get("id"), child.get("messages"), child.get("days", [])
        if not isinstance(child_id, str) or not isinstance(messages, list):
            return None
        if not all(isinstance(i, str) for i in messages) or not isinstance(days, list):
            return None
        found.append(SplitChild(child_id, tuple(messages), tuple(str(d) for d in days)))
    return found


def check_parts(
    parent_id: str, held: Sequence[StoredMessage], parts: Sequence[SubtopicPart]
) -> list[list[str]]:
    """Refuse parts that do not partition the parent's messages (ValueError naming the first).

    Args:
        parent_id: The topic being split.
        held: Its messages now, in its order (merged topics' included).
        parts: The subtopics asked for.

    Returns:
        Each part's ids in the parent's order.
    """
    if len(parts) < 2:
        raise ValueError(f"a split of topic {parent_id!r} needs at least two parts")
    place = {message["id"]: n for n, message in enumerate(held)}
    taken: dict[str, int] = {}
    for number, part in enumerate(parts):
        name = part.get("name")
        if not isinstance(name, str) or not isinstance(part.get("brief"), str):
            raise ValueError(f"part {number} of the split of {parent_id!r} has no name or brief")
        ids = part.get("message_ids")
        if not isinstance(ids, list | tuple) or not ids:
            raise ValueError(f"part {number} ({name!r}) of the split of {parent_id!r} is empty")
        for message_id in ids:
            if not isinstance(message_id, str) or message_id not in place:
                raise ValueError(f"message {message_id!r} is not in topic {parent_id!r}")
            if message_id in taken:
                raise ValueError(
                    f"message {message_id!r} is in parts {taken[message_id]} and {number}"
                )
            taken[message_id] = number
    for message in held:
        if message["id"] not in taken:
            raise ValueError(f"message {message['id']!r} of topic {parent_id!r} is in no part")
    return [sorted(part["message_ids"], key=place.__getitem__) for part in parts]
