"""Group messages into units that a split must never separate.

A unit is a user message with the replies that follow it, and an assistant tool call with all of
its tool results: cutting between a tool call and its result makes providers reject the next
request, and splitting a question from its answer loses what the answer was about.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from langgraph_topics.state.records import StoredMessage

if TYPE_CHECKING:
    from langgraph_topics.stores.protocols import TopicStore

_FIRST_REACH = 8
_MAX_REACH = 4096


def group_units(messages: Sequence[StoredMessage]) -> list[list[StoredMessage]]:
    """Split a run of messages into inseparable units, keeping order."""
    units: list[list[StoredMessage]] = []
    open_calls: set[str] = set()
    for message in messages:
        # A user message ends any tool exchange still open: a call never answered by then
        # will not be (providers refuse such a history anyway), and waiting for it would glue
        # every later message into one unit that no split could ever cut.
        starts_unit = message["role"] == "user"
        if starts_unit:
            open_calls.clear()
        if starts_unit or not units:
            units.append([message])
        else:
            units[-1].append(message)
        for call in message.get("tool_calls", []):
            call_id = call.get("id")
            if isinstance(call_id, str):
                open_calls.add(call_id)
        if message["role"] == "tool":
            open_calls.discard(message.get("tool_call_id", ""))
    return units


def split_point(messages: Sequence[StoredMessage], keep_last: int) -> int:
    """Index before which messages may be split so that at least ``keep_last`` stay unsplit.

    The point moves earlier until it falls on a unit boundary, so the kept tail never begins in
    the middle of a question-and-answer or a tool exchange.
    """
    limit = max(0, len(messages) - keep_last)
    boundaries = [0]
    position = 0
    for unit in group_units(messages):
        position += len(unit)
        boundaries.append(position)
    return max(b for b in boundaries if b <= limit)


def unit_in_store(store: TopicStore, message_id: str) -> list[StoredMessage]:
    """The unit holding a stored message, read from its neighbourhood (``[]`` if unknown).

    The same unit :func:`group_units` gives over the whole topic: from the last user message
    at or before it to the next user message. Only the neighbourhood is read, widened while
    the unit may reach past it, so the cost is the unit's size, not the topic's.
    """
    reach = _FIRST_REACH
    while True:
        run = store.neighbours(message_id, reach, reach)
        place = next((i for i, m in enumerate(run) if m["id"] == message_id), None)
        if place is None:
            return []
        start = next((i for i in range(place, -1, -1) if run[i]["role"] == "user"), None)
        end = next((i for i in range(place + 1, len(run)) if run[i]["role"] == "user"), None)
        # Clipped on a side only if that side found no boundary and was read to full reach.
        open_before = start is None and place == reach
        open_after = end is None and len(run) - 1 - place == reach
        if not (open_before or open_after) or reach >= _MAX_REACH:
            return run[start or 0 : len(run) if end is None else end]
        reach *= 4
