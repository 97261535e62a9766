"""The user of a graph run, and the refusal of a thread stored as another user's.

A run names its user as ``context.user_id`` or ``config["configurable"]["user_id"]`` (the
context's wins; LangGraph Server fills the latter with its authenticated user, empty without
authentication). A user's threads are stored under user-scoped ids (``threads.py``); a run
whose thread is one user's and whose user is another is refused with one line (by
``TopicMemory`` before the turn writes anything; by the graph's first node for a run that
reaches it directly), so a user id never reads another user's thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.config import get_config
from langgraph.runtime import Runtime

from langgraph_topics.errors import InputError
from langgraph_topics.scope.threads import (
    MemoryScope,
    belongs_to,
    check_user_id,
    local_thread_id,
    scoped_thread_id,
)
from langgraph_topics.scope.topic_reading import NO_READING, ScopeReading
from langgraph_topics.services import run_thread_id, services_of
from langgraph_topics.thread_ids import scoped_parts

USER_ID_KEY = "user_id"


def user_id_of(runtime: Runtime[Any] | None) -> str | None:
    """The run's user id, checked (None when the run names none).

    Raises:
        InputError: A user id that cannot name a user (one line naming it).
    """
    given = context_user_of(runtime)
    if given is not None:
        return given
    try:
        config = get_config()
    except RuntimeError:  # outside a run
        return None
    return given_user(config, None)


def context_user_of(runtime: Runtime[Any] | None) -> str | None:
    """The user id the run's context names, checked (an attribute, or a dict context's key).

    Raises:
        InputError: A user id that cannot name a user (one line naming it).
    """
    return _checked(_named_user(runtime.context if runtime is not None else None))


def _named_user(context: Any) -> object:
    """What ``context`` gives as its user id: an attribute, or a dict context's key."""
    given = getattr(context, USER_ID_KEY, None)
    if given is None and isinstance(context, Mapping):
        given = context.get(USER_ID_KEY)
    return given


def _checked(given: object) -> str | None:
    """A run's user id, checked; None for none.

    LangGraph Server puts its authenticated user in ``configurable.user_id``, the empty string
    when the request carried no authentication: that is no user, not a bad one.
    """
    return None if given is None or given == "" else check_user_id(given)


def refuse_foreign_run(config: Mapping[str, Any] | None, context: Any) -> None:
    """Refuse a run of a user's thread under another user id, before the run starts.

    ``config`` and ``context`` as given to ``invoke``/``stream``: the context's ``user_id``
    (an attribute, or a key of a dict context), else ``configurable.user_id``.

    Raises:
        InputError: One line (``check_thread_owner``), or a user id that cannot name one.
    """
    configurable = (config or {}).get("configurable") or {}
    thread_id = configurable.get("thread_id")
    if not isinstance(thread_id, str) or scoped_parts(thread_id) is None:
        return
    check_thread_owner(thread_id, given_user(config, context))


def given_user(config: Mapping[str, Any] | None, context: Any) -> str | None:
    """The user a run is started for (``config`` and ``context`` as given to ``stream``).

    Raises:
        InputError: A user id that cannot name a user (one line naming it).
    """
    given = _checked(_named_user(context))
    if given is not None:
        return given
    return _checked(((config or {}).get("configurable") or {}).get(USER_ID_KEY))


def check_run_scope(runtime: Runtime[Any] | None, thread_id: str) -> None:
    """Refuse a graph run whose thread is stored as another user's (``check_thread_owner``).

    Raises:
        InputError: That, or a user id that cannot name a user (even on a plain thread: a
            client sending a NUL or an empty id made a mistake worth one line).
    """
    check_thread_owner(thread_id, user_id_of(runtime))


def agent_thread(runtime: Runtime[Any] | None, scope: MemoryScope) -> tuple[str, str | None]:
    """The memory thread of an agent's run (``TopicMemoryMiddleware``), and its scope's user.

    An agent's thread id is the application's own (its checkpointer's). In ``user`` scope a
    run naming user ``U`` (as a graph run does: ``user_id_of``) works on U's thread of that
    name, stored apart from every other user's (``scoped_thread_id``), and U is returned: the
    turn reads U's other threads. In ``thread`` scope, or without a user, the thread is the
    agent's thread id as it always was. A user id that cannot name a user, or a thread stored
    as another user's, is refused in either scope.

    Raises:
        InputError: One line; nothing was read or written.
    """
    return scope_thread(run_thread_id(runtime), user_id_of(runtime), scope)


def scope_thread(thread_id: str, user_id: str | None, scope: MemoryScope) -> tuple[str, str | None]:
    """``agent_thread`` of a run on ``thread_id`` naming ``user_id`` (checked) or none."""
    if user_id is None:
        return thread_id, None
    check_thread_owner(thread_id, user_id)
    if scope != "user":
        return thread_id, None
    if scoped_parts(thread_id) is not None:  # the user's stored id, named as it is
        return thread_id, user_id
    return scoped_thread_id(user_id, thread_id), user_id


def memory_thread_of(runtime: Runtime[Any] | None) -> str:
    """The memory thread of a graph run (``services.thread_id_of``): ``agent_thread``'s.

    The run's thread id is the application's (a server's, the caller's checkpointer's); in
    ``user`` scope a run whose context names user ``U`` keeps its topics, indexes and workflow
    in U's thread of that name, apart from every other user's, while its checkpoints stay
    under the run's thread id (``check_memory_thread`` keeps the two matched). The context's
    user only: a run's ``configurable.user_id`` is put there by ``TopicGraph.stream``
    (``scope.graph_run``), while a ``TopicMemory`` turn run inside another run that names a
    user (``run_turn`` in an application's node) keeps the thread it was given.

    Raises:
        InputError: An invalid thread or user id, or a thread stored as another user's.
    """
    user_id = context_user_of(runtime)
    if user_id is None:  # a plain run: no settings looked at, the thread as it always was
        return run_thread_id(runtime)
    return scope_thread(
        run_thread_id(runtime), user_id, services_of(runtime).settings.memory_scope
    )[0]


MEMORY_THREAD_KEY = "memory_thread"
"""State key naming the memory thread of a checkpoint kept under another thread id."""


def check_memory_thread(
    state: Mapping[str, Any], run_thread: str, memory_thread: str
) -> dict[str, Any]:
    """Keep a thread's checkpoints and its stores matched; the state update recording them.

    A user-scope run on the application's thread ``T`` keeps its stores as its user's thread
    ``T`` (``memory_thread_of``) and its checkpoints under ``T``: the first such run records
    the memory thread in the state (``memory_thread``), which is how another thread of the
    user finds this one's unsplit messages (``scope.graph_run``). A later run whose memory
    thread differs (the scope switched, another user, no user) would read topics its stores do
    not hold and write where the checkpoint does not look: it is refused. A thread-scope run,
    or one on the stored id itself, records nothing (its state as it always was).

    Args:
        state: The run's checkpointed state.
        run_thread: The run's thread id (``run_thread_id``).
        memory_thread: Its memory thread (``memory_thread_of``).

    Raises:
        InputError: One line naming the thread; nothing was written.
    """
    marked = state.get(MEMORY_THREAD_KEY)
    if marked == memory_thread or (marked is None and memory_thread == run_thread):
        return {}
    if marked is None and not state.get("total_messages"):  # a new thread: record it
        return {MEMORY_THREAD_KEY: memory_thread}
    shown = local_thread_id(run_thread)
    if marked is None:
        raise InputError(
            f"thread {shown!r} holds a thread-scope memory: a user-scope run cannot take it "
            "over (its topics would be lost to it); run it in thread scope, or start a new "
            "thread"
        )
    if scoped_parts(memory_thread) is None:
        raise InputError(
            f"thread {shown!r} holds a user's memory (user scope): run it in user scope "
            "with its own user id"
        )
    raise InputError(
        f"thread {shown!r} belongs to another user's memory scope: run it with its own user id"
    )


def check_thread_owner(thread_id: str, user_id: str | None) -> None:
    """Refuse a turn of user ``user_id`` on a thread stored as another user's.

    A turn naming no user is not refused: the memory's own runs (a background split, a turn
    cut short and finished) name none, and a client can name any user id anyway; what the
    scope guarantees is that a user id reaches only its own threads.

    Raises:
        InputError: One line naming the thread; nothing of it was read.
    """
    if user_id is None or scoped_parts(thread_id) is None:
        return
    if not belongs_to(thread_id, user_id):
        raise InputError(
            f"thread {local_thread_id(thread_id)!r} belongs to another user's memory scope: "
            "run it with its own user id"
        )


def scope_quotes_of(runtime: Runtime[Any] | None) -> ScopeReading:
    """What the run was given of the user's other threads (nothing in thread scope)."""
    context = runtime.context if runtime is not None else None
    quotes = getattr(context, "scope_quotes", None)
    if isinstance(quotes, ScopeReading):
        return quotes
    return ScopeReading(quotes) if isinstance(quotes, list) and quotes else NO_READING
