"""Group messages into units that a split must never separate.

A unit is a user message with the replies that follow it, and an assistant tool call with all of
its tool results: cutting between a tool call and its result makes providers reject the next
request, and splitting a question from its answer loses what the answer was about.
"""

from __future__ import annotations

from collections.abc import Sequence

from langgraph_topics.state.records import StoredMessage


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
