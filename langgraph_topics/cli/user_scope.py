"""``--user`` on the command line: a user's threads, the ``forget`` command, ``check --user``.

With ``--user U`` every thread command works on U's thread of that name (stored under its
user-scoped id, ``scope/threads.py``); ``chat``, ``context`` and ``import`` also record the
thread as U's, and in ``user`` scope (``--scope user``, or ``Settings.memory_scope``) a turn
reads U's other threads. ``forget --user U`` deletes every thread of U and U's registry, then
checks that nothing of U is left; ``check --user U`` (without ``--thread``) checks every thread
of U, or, for a forgotten user, that nothing of U is stored.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langgraph_topics.cli.tables import print_json
from langgraph_topics.errors import InputError

CHECK_FAILED = 1


def user_type(text: str) -> str:
    """Read ``--user`` (an ``argparse`` type: a bad id is a usage error)."""
    from langgraph_topics.scope.threads import check_user_id

    try:
        return check_user_id(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_user_options(parser: argparse.ArgumentParser) -> None:
    """``--user`` and ``--scope``, for every thread command."""
    parser.add_argument(
        "--user",
        type=user_type,
        default=None,
        help="work on this user's thread of the --thread name (user threads are stored apart)",
    )
    parser.add_argument(
        "--scope",
        choices=("thread", "user"),
        default=None,
        help="with --user, what a turn reads: its thread only, or every thread of the user "
        "(default: user with --user)",
    )


def add_forget_parser(commands: Any, data_dir: Callable[[argparse.ArgumentParser], None]) -> None:
    """Register ``forget``."""
    summary = "delete every thread of a user and check that nothing of the user is left"
    forget = commands.add_parser(
        "forget", help=summary, description=summary[:1].upper() + summary[1:] + "."
    )
    forget.add_argument("--user", type=user_type, required=True, help="the user to forget")
    forget.add_argument("--json", action="store_true", help="print the report as JSON")
    data_dir(forget)
    forget.set_defaults(thread=None, budget=None, scope=None)


def scoped_args(args: argparse.Namespace) -> None:
    """Name the user's thread in ``args.thread`` when ``--user`` is given."""
    from langgraph_topics.scope.threads import scoped_thread_id

    user = getattr(args, "user", None)
    if user is not None and getattr(args, "thread", None) is not None:
        args.local_thread = args.thread
        args.thread = scoped_thread_id(user, args.thread)


def scoped_memory(memory: Any, args: argparse.Namespace) -> Any:
    """``memory``, or with ``--user`` its turns as the user's (``UserTurns``)."""
    user = getattr(args, "user", None)
    if user is None:
        return memory
    return UserTurns(memory, memory.user(user, scope=getattr(args, "scope", None) or "user"))


class UserTurns:
    """A memory whose turns, windows and imports are one user's (the CLI's ``--user``).

    Everything else is the memory's own: the commands name the user's threads by their
    stored ids already (``scoped_args``).
    """

    def __init__(self, memory: Any, user: Any) -> None:
        self._memory = memory
        self._user = user

    def __getattr__(self, name: str) -> Any:
        return getattr(self._memory, name)

    def run_turn(self, thread_id: str, payload: Mapping[str, Any], **options: Any) -> Any:
        """``TopicMemory.run_turn`` as the user's turn (registered, reading the scope)."""
        return self._user.run_turn(thread_id, payload, **options)

    def context(self, thread_id: str, text: str) -> Any:
        """``TopicMemory.context`` with the user's other threads quoted (user scope)."""
        return self._user.context_of(thread_id, text)

    def import_messages(self, thread_id: str, records: Sequence[Any], **options: Any) -> int:
        """``TopicMemory.import_messages`` into the user's thread (registered once done).

        A thread whose checkpoints a graph run keeps is refused first (one line).
        """
        from langgraph_topics.scope.threads import local_thread_id

        self._user.refuse_other_way(local_thread_id(thread_id))
        added = int(self._memory.import_messages(thread_id, records, **options))
        self._user.register(thread_id)
        return added


def run_forget(args: argparse.Namespace, open_memory: Callable[..., Any]) -> int:
    """Delete user ``--user``; exit status 1 when something of the user is still stored."""
    from langgraph_topics.scope.threads import local_thread_id

    memory = open_memory(args)
    try:
        user = memory.user(args.user)
        deleted = [local_thread_id(t) for t in user.forget()]
        left = user.remnants()
    finally:
        memory.close()
    if args.json:
        print_json({"user": args.user, "threads_deleted": deleted, "left": left, "ok": not left})
    else:
        print(f"user {args.user!r}: {len(deleted)} threads deleted ({', '.join(deleted)})")
        print(_left_line(args.user, left))
        for line in left:
            print(f"- {line}")
    return CHECK_FAILED if left else 0


def run_user_check(args: argparse.Namespace, open_memory: Callable[..., Any]) -> int:
    """``check --user U``: every thread of U, or for a user with none, nothing of U stored."""
    memory = open_memory(args)
    try:
        user = memory.user(args.user)
        findings: list[str] = []
        ok = True
        threads = [t["thread_id"] for t in user.threads()]
        for thread in threads:
            report = memory.check(user.thread(thread))
            ok = ok and report.ok
            findings.extend(f"thread {thread!r}: {f}" for f in report.findings)
        left = [] if threads else user.remnants()
    finally:
        memory.close()
    ok = ok and not left
    if args.json:
        print_json(
            {"ok": ok, "user": args.user, "threads": threads, "findings": findings, "left": left}
        )
        return 0 if ok else CHECK_FAILED
    if threads:
        print("all invariants hold" if ok else "INVARIANT BROKEN")
        print(f"user {args.user!r}: {len(threads)} threads checked ({', '.join(threads)})")
    else:
        print(_left_line(args.user, left))
    for line in [*findings, *left]:
        print(f"- {line}")
    return 0 if ok else CHECK_FAILED


def _left_line(user: str, left: Sequence[str]) -> str:
    if not left:
        return f"nothing of user {user!r} is stored"
    return f"STILL STORED: {len(left)} things of user {user!r}"


def refuse_scope_without_user(args: argparse.Namespace) -> None:
    """``--scope`` means nothing without ``--user``: say so rather than ignore it."""
    if getattr(args, "scope", None) is not None and getattr(args, "user", None) is None:
        raise InputError("--scope needs --user (a thread without a user reads itself only)")
