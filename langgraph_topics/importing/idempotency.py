"""Importing is idempotent by id: what the thread already holds is skipped, never duplicated."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from langchain_core.messages import AnyMessage

from langgraph_topics.errors import InputError
from langgraph_topics.importing.records import CheckedMessage, same_message
from langgraph_topics.state.messages import to_stored
from langgraph_topics.state.records import StoredMessage


def messages_to_add(
    checked: Sequence[CheckedMessage], held: Mapping[str, StoredMessage], thread_id: str
) -> list[AnyMessage]:
    """The messages of ``checked`` that the thread does not hold yet, in input order.

    Args:
        checked: The import, already checked (ids unique within it).
        held: The thread's messages (working set or topics) among the ids of ``checked``.
        thread_id: Named in the error.

    Raises:
        InputError: An id the thread holds with other content, naming the record and the id.
            Nothing has been written then.
    """
    fresh: list[AnyMessage] = []
    for entry in checked:
        existing = held.get(entry.id)
        if existing is None:
            fresh.append(entry.message)
        elif not same_message(to_stored(entry.message), existing):
            raise InputError(
                f"{entry.origin.prefix}: id {entry.id!r} is already in thread {thread_id!r} "
                "with different content; give the message a new id"
            )
    return fresh
