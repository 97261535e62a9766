"""Which checkpoint thread id holds a user's thread, and the refusal of a run that differs.

A user's thread ``T`` keeps its stores as ``scoped_thread_id(U, T)`` however it is run, but
its checkpoints under one of two ids: the stored id itself (``TopicMemory.user``,
``TopicMemoryMiddleware``, a graph run given that id) or the application's thread id ``T`` (a
``user``-scope run of the graph naming user ``U``: LangGraph Server, Studio,
``graph.invoke``; ``run_scope.memory_thread_of``). A thread run both ways would have two
checkpoint histories over one set of stores, each missing what the other split. So the
user's registry records the thread's *home* on its first run (``registry.py``), and a run
from the other home is refused with one line before it reads or writes anything.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from langgraph_topics.errors import InputError
from langgraph_topics.thread_ids import scoped_parts

CheckpointHome = Literal["stored", "app"]
"""``stored``: checkpoints under the user's stored id; ``app``: under the application's id."""
CHECKPOINT_HOMES: tuple[CheckpointHome, ...] = ("stored", "app")
CHECKPOINTS_KEY = "checkpoints"
"""The registry field recording a thread's home (a line of ``threads.jsonl``, a store item)."""

_WAYS: dict[CheckpointHome, str] = {
    "stored": "through TopicMemory.user or TopicMemoryMiddleware (checkpoints under its "
    "user-scoped id)",
    "app": "as a graph run on the application's thread id (checkpoints under {thread!r})",
}


def home_of(run_thread: str) -> CheckpointHome:
    """The home of a run of a user's thread whose checkpoint thread id is ``run_thread``."""
    return "stored" if scoped_parts(run_thread) is not None else "app"


def recorded_home(value: object) -> CheckpointHome | None:
    """The home a registry value records (None: none, or not one this version knows)."""
    for home in CHECKPOINT_HOMES:
        if value == home:
            return home
    return None


def must_record(
    user_id: str,
    thread_id: str,
    home: CheckpointHome,
    recorded: CheckpointHome | None,
    *,
    registered: bool,
    held: Callable[[], bool],
) -> bool:
    """Whether a run from ``home`` must record it; refuses a run from another home.

    Args:
        user_id: The thread's user.
        thread_id: The thread as the user names it.
        home: Where this run keeps its checkpoints.
        recorded: The home the registry records for the thread (None: none).
        registered: Whether the registry lists the thread.
        held: Whether this run's checkpoints already hold the thread, and no other home's
            the run can see does. Asked only for a thread registered before homes were
            recorded: such a thread is recorded only when that is unambiguous, and otherwise
            runs as it did (nothing recorded, nothing refused).

    Raises:
        InputError: One line naming the thread, its user and the way it is run.
    """
    refuse_other_home(user_id, thread_id, home, recorded)
    if recorded is not None:
        return False
    return not registered or held()


def refuse_other_home(
    user_id: str, thread_id: str, home: CheckpointHome, recorded: CheckpointHome | None
) -> None:
    """Refuse a run from ``home`` of a thread whose ``recorded`` home differs (none: never).

    Raises:
        InputError: One line (``refusal``).
    """
    if recorded is not None and recorded != home:
        raise InputError(refusal(user_id, thread_id, recorded))


def refusal(user_id: str, thread_id: str, recorded: CheckpointHome) -> str:
    """The line refusing a run of the thread other than its ``recorded`` way."""
    way = _WAYS[recorded].format(thread=thread_id)
    return (
        f"thread {thread_id!r} of user {user_id!r:.80} is run {way}: run it that way, "
        "or use another thread id"
    )
