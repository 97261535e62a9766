"""User ids, and the thread ids a user's threads are stored under.

A user's thread ``T`` is stored as the thread ``<mark><user key><mark>T`` (``SCOPE_MARK``, a
control character no plain thread id may hold): every store, lock and checkpoint keyed by a
thread id keeps one user's threads apart from another's, and from every plain thread, with no
change to how a thread is stored.
"""

from __future__ import annotations

from typing import Literal

from langgraph_topics.errors import InputError
from langgraph_topics.thread_ids import (
    SCOPE_MARK,
    check_thread_id,
    id_problem,
    scoped_parts,
    thread_key,
)

MemoryScope = Literal["thread", "user"]
MEMORY_SCOPES: tuple[MemoryScope, ...] = ("thread", "user")
"""``thread``: a turn reads its own thread only (the default, as before scopes existed);
``user``: it also reads the other threads of its user."""


def check_user_id(user_id: object) -> str:
    """Return ``user_id`` unchanged if it can name a user (the rules of a thread id).

    Raises:
        InputError: One line naming the id, repr'd, and what is wrong with it.
    """
    if not isinstance(user_id, str):
        raise InputError(
            f"invalid user id {user_id!r:.80}: a string is needed, not {type(user_id).__name__}"
        )
    problem = id_problem(user_id)
    if problem is None:
        return user_id
    shown = repr(user_id) if len(user_id) <= 80 else f"{user_id[:60]!r}…"
    raise InputError(f"invalid user id {shown}: {problem}")


def user_key(user_id: str) -> str:
    """The user's label in file names and namespaces: readable, collision-free, no ``.``."""
    return thread_key(check_user_id(user_id))


def scoped_thread_id(user_id: str, thread_id: str) -> str:
    """The id user ``user_id``'s thread ``thread_id`` is stored under.

    Raises:
        InputError: An invalid user id or thread id (one line naming it).
    """
    key = user_key(user_id)
    local = check_thread_id(thread_id)
    if scoped_parts(local) is not None:
        raise InputError(f"invalid thread id {local!r}: it is already a user's thread")
    return f"{SCOPE_MARK}{key}{SCOPE_MARK}{local}"


def local_thread_id(thread_id: str) -> str:
    """The thread id as its user named it (a plain thread id is returned as it is)."""
    parts = scoped_parts(thread_id)
    return thread_id if parts is None else parts[1]


def belongs_to(thread_id: str, user_id: str) -> bool:
    """Whether ``thread_id`` is one of user ``user_id``'s threads."""
    parts = scoped_parts(thread_id)
    return parts is not None and parts[0] == user_key(user_id)


def check_scope(scope: object) -> MemoryScope:
    """Return ``scope`` if it is a memory scope.

    Raises:
        InputError: One line naming the value and the scopes there are.
    """
    for known in MEMORY_SCOPES:
        if scope == known:
            return known
    raise InputError(f"memory scope must be one of {', '.join(MEMORY_SCOPES)}, got {scope!r:.80}")
