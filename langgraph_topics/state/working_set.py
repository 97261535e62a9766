"""Views of the working set: which messages are unsplit, which are the recent ones."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AnyMessage

from langgraph_topics.state.messages import to_stored
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.protocols import TopicStore


def stored_view(messages: Sequence[AnyMessage]) -> list[StoredMessage]:
    """The working set as stored records, in conversation order."""
    return [to_stored(m) for m in messages]


def unsplit_messages(messages: Sequence[StoredMessage], store: TopicStore) -> list[StoredMessage]:
    """Messages of the working set that no topic holds."""
    located = store.message_ids()
    return [m for m in messages if m["id"] not in located]


def recent_messages(messages: Sequence[StoredMessage], keep_recent: int) -> list[StoredMessage]:
    """The last ``keep_recent`` messages (always in the main window)."""
    return list(messages[-keep_recent:]) if keep_recent > 0 else []
