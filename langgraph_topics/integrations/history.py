"""Import an existing LangChain chat history into topic memory."""

from __future__ import annotations

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage, SystemMessage

from langgraph_topics.memory import TopicMemory


def import_chat_history(
    memory: TopicMemory,
    thread_id: str,
    history: BaseChatMessageHistory,
    *,
    id_prefix: str = "history-",
) -> int:
    """Record the messages of ``history`` in ``thread_id``; returns how many were added.

    Messages without an id get a positional one (``history-000000``, …), so importing the same
    history again, or after it grew, adds only the messages memory does not have yet (the
    import skips ids the thread holds with the same content). System messages are
    instructions, not conversation, and are skipped.

    Args:
        memory: The topic memory to import into.
        thread_id: The conversation thread.
        history: Any LangChain chat message history (in memory, file, Redis, SQL, …).
        id_prefix: Prefix of the positional ids given to messages without one.

    Raises:
        InputError: A message's id is in the thread with other content (the history was
            edited, not only extended); nothing is written then.
    """
    pending: list[BaseMessage] = []
    for position, message in enumerate(history.messages):
        if isinstance(message, SystemMessage):
            continue
        if not message.id:
            message = message.model_copy(update={"id": f"{id_prefix}{position:06d}"})
        pending.append(message)
    return memory.import_messages(thread_id, pending) if pending else 0
