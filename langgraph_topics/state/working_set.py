"""Views of the working set: which messages are unsplit, which are the recent ones."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from langchain_core.messages import AnyMessage

from langgraph_topics.state.messages import to_stored
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.protocols import TopicStore


def stored_view(messages: Sequence[AnyMessage]) -> list[StoredMessage]:
    """The working set as stored records, in conversation order."""
    return [to_stored(m) for m in messages]


def unsplit_messages(messages: Sequence[StoredMessage], store: TopicStore) -> list[StoredMessage]:
    """Messages of the working set that no topic holds."""
    located = store.locate_many(m["id"] for m in messages)
    return [m for m in messages if m["id"] not in located]


def located_in_topics(message_ids: Iterable[str], store: TopicStore) -> dict[str, str]:
    """Which of the given messages a topic holds, and which topic.

    Looks up only the given ids (the working set is small; the store may hold millions).
    """
    return store.locate_many(message_ids)


def recent_messages(messages: Sequence[StoredMessage], keep_recent: int) -> list[StoredMessage]:
    """The last ``keep_recent`` messages (always in the main window).

    When the cut falls inside a tool exchange, it moves back to the call: a tool result never
    enters the window without the call it answers (invariant 8), even when several calls came
    before their results.
    """
    if keep_recent <= 0:
        return []
    start = max(0, len(messages) - keep_recent)
    calls = {
        str(call.get("id")): place
        for place, message in enumerate(messages)
        for call in message.get("tool_calls") or []
    }
    # Any result of the recent part pulls the cut back to its call, and so do the results the
    # move brings in (walking down while the cut moves). A result whose call is not in the
    # working set at all cannot be helped.
    place = len(messages) - 1
    while place >= start:
        answered = messages[place].get("tool_call_id")
        if messages[place]["role"] == "tool" and answered in calls:
            start = min(start, calls[str(answered)])
        place -= 1
    return list(messages[start:])


def newest_within(
    messages: Sequence[StoredMessage], tokens: int, count: Callable[[str], int]
) -> list[StoredMessage]:
    """The newest messages within ``tokens``, always back to the newest user message.

    The cut moves back to a tool call whose results it keeps (as :func:`recent_messages`).
    """
    newest_user = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "user"), 0
    )
    spent = 0
    start = len(messages)
    while start > 0:
        cost = count(messages[start - 1]["content"])
        if start - 1 < newest_user and spent + cost > tokens:
            break
        spent += cost
        start -= 1
    return recent_messages(messages, len(messages) - start)
