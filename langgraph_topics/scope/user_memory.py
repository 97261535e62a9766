"""One user's memory: their threads, read as one scope (``TopicMemory.user``; issue 40).

Every method names a thread as the user does; it is stored under the user-scoped id
(``threads.scoped_thread_id``), so two users' threads of the same name never meet. A turn
first records the thread in the user's registry, then (in ``user`` scope) reads the user's
other threads for its question (``recall.py``, under their files locks, before it takes its
own), then runs as any thread's turn, with what it read quoted in its window.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.base import BaseCheckpointSaver

from langgraph_topics.importing import SourcedRecord
from langgraph_topics.message_texts import check_message_text
from langgraph_topics.scope.checkpoint_home import refuse_other_home
from langgraph_topics.scope.forget import forget_user, user_remnants
from langgraph_topics.scope.recall import recall_from_threads
from langgraph_topics.scope.registry import RegisteredThread
from langgraph_topics.scope.run_scope import check_thread_owner
from langgraph_topics.scope.threads import (
    MemoryScope,
    check_scope,
    check_user_id,
    local_thread_id,
    scoped_thread_id,
)
from langgraph_topics.scope.topic_reading import ScopeReading
from langgraph_topics.thread_ids import check_thread_id

if TYPE_CHECKING:
    from langgraph_topics.memory import ContextReport, TopicMemory


class UserMemory:
    """The threads of ``user_id`` in ``memory``.

    Args:
        memory: The memory holding them.
        user_id: The user (refused with one line when it cannot name one).
        scope: ``user``: a turn also reads the user's other threads; ``thread``: its own only.

    Raises:
        InputError: An invalid user id or scope.
    """

    def __init__(self, memory: TopicMemory, user_id: str, scope: str) -> None:
        self.memory = memory
        self.user_id = check_user_id(user_id)
        self.scope: MemoryScope = check_scope(scope)

    def thread(self, thread_id: str) -> str:
        """The id the user's thread ``thread_id`` is stored under.

        For the other methods of ``TopicMemory``: ``topics``, ``transcript``, ``check``…
        """
        return scoped_thread_id(self.user_id, thread_id)

    def threads(self) -> list[RegisteredThread]:
        """The user's threads, in the order they joined."""
        return self.memory.scope_registry.threads(self.user_id)

    def register(self, stored_id: str) -> None:
        """Record the thread stored as ``stored_id`` as the user's (it must be the user's)."""
        check_thread_owner(check_thread_id(stored_id), self.user_id)
        local = local_thread_id(stored_id)
        self.memory.scope_registry.add(self.user_id, local, "stored", self._held(local))

    def refuse_other_way(self, thread_id: str) -> None:
        """Refuse the user's thread when a graph run keeps its checkpoints (nothing recorded).

        Raises:
            InputError: One line (``checkpoint_home.refusal``).
        """
        recorded = self.memory.scope_registry.home(self.user_id, check_thread_id(thread_id))
        refuse_other_home(self.user_id, thread_id, "stored", recorded)

    def run_turn(self, stored_id: str, payload: Mapping[str, Any], **options: Any) -> Any:
        """``TopicMemory.run_turn`` on the user's thread stored as ``stored_id`` (the CLI's).

        The thread is registered, and in ``user`` scope the payload's last user message is
        looked for in the user's other threads first.
        """
        check_thread_owner(check_thread_id(stored_id), self.user_id)
        quotes = self.enter(local_thread_id(stored_id), _last_user_text(payload))
        return self.memory.run_turn(
            stored_id, payload, user_id=self.user_id, scope_quotes=quotes, **options
        )

    def context_of(self, stored_id: str, text: str) -> ContextReport:
        """``context`` of the user's thread stored as ``stored_id`` (the CLI's)."""
        check_thread_owner(check_thread_id(stored_id), self.user_id)
        return self.context(local_thread_id(stored_id), text)

    def chat(self, thread_id: str, text: str) -> str:
        """Send a user message on the user's thread ``thread_id``; returns the answer.

        Raises:
            InputError: An invalid thread id or text (nothing written).
            ThreadBusyError: Another writer kept the thread past the lock timeout.
        """
        stored = self.thread(thread_id)
        text = check_message_text(text)
        return self.memory.chat(
            stored, text, user_id=self.user_id, scope_quotes=self.enter(thread_id, text)
        )

    def context(self, thread_id: str, text: str) -> ContextReport:
        """The main window a turn on ``thread_id`` would assemble for ``text`` (nothing stored).

        Raises:
            InputError: An invalid thread id or text, or a thread a graph run keeps
                (``refuse_other_way``).
        """
        stored = self.thread(thread_id)
        text = check_message_text(text)
        self.refuse_other_way(thread_id)
        return self.memory.context(
            stored, text, user_id=self.user_id, scope_quotes=self.recall(thread_id, text)
        )

    def import_messages(
        self, thread_id: str, messages: Iterable[BaseMessage | Mapping[str, Any] | SourcedRecord]
    ) -> int:
        """Import a past conversation into the user's thread (``TopicMemory.import_messages``).

        The thread is registered once the import is done: a refused input registers nothing
        (an import cut short is found by ``forget`` through its checkpoints all the same).
        A thread a graph run keeps is refused first (``refuse_other_way``).
        """
        stored = self.thread(thread_id)
        self.refuse_other_way(thread_id)
        added = self.memory.import_messages(stored, messages)
        self.memory.scope_registry.add(self.user_id, thread_id, "stored", self._held(thread_id))
        return added

    def enter(self, thread_id: str, text: str) -> ScopeReading:
        """Record a turn on the user's thread ``thread_id``; what the others hold for ``text``.

        The thread is registered as the user's; in ``user`` scope it also becomes the user's
        most recently active thread, and the ``Settings.scope_threads`` most recently active
        others are read (``recall``), before the turn takes its own thread's locks.

        Raises:
            InputError: A thread whose checkpoints a graph run keeps under the application's
                thread id (``checkpoint_home.py``; nothing recorded).
        """
        registry = self.memory.scope_registry
        held = self._held(thread_id)
        if self.scope != "user":
            registry.add(self.user_id, thread_id, "stored", held)
            return ScopeReading([])
        recent = registry.enter(self.user_id, check_thread_id(thread_id), "stored", held)
        return recall_from_threads(self.memory, self.user_id, thread_id, text, recent)

    def _held(self, thread_id: str) -> Callable[[], bool]:
        """Whether the thread has checkpoints under its stored id (asked only on doubt)."""
        stored = self.thread(thread_id)
        return lambda: (
            self.memory.checkpointer.get_tuple(self.memory.run_config(stored)) is not None
        )

    def recall(self, thread_id: str, text: str) -> ScopeReading:
        """What the user's other threads hold for ``text`` (none in ``thread`` scope)."""
        if self.scope != "user":
            return ScopeReading([])
        return recall_from_threads(self.memory, self.user_id, check_thread_id(thread_id), text)

    def forget(self, checkpointers: Sequence[BaseCheckpointSaver[Any]] = ()) -> list[str]:
        """Delete every thread of the user and their registry; returns the threads deleted.

        ``checkpointers``: checkpointers besides the memory's whose graph runs kept threads of
        the user in ``user`` scope (a LangGraph Server's, ``scope/graph_run.py``): their
        checkpoints of those threads are deleted too.
        """
        return forget_user(self.memory, self.user_id, checkpointers)

    def remnants(self, checkpointers: Sequence[BaseCheckpointSaver[Any]] = ()) -> list[str]:
        """What of the user is still stored, one line each (empty after ``forget``).

        ``checkpointers``: as ``forget``'s, looked in too.
        """
        return user_remnants(self.memory, self.user_id, checkpointers)


def _last_user_text(payload: Mapping[str, Any]) -> str:
    """The text of the payload's last user message ('' when it carries none)."""
    for message in reversed(list(payload.get("messages") or [])):
        if getattr(message, "type", None) == "human":
            content = message.content
            return content if isinstance(content, str) else ""
    return ""
