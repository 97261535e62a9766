"""Which threads belong to a user: the scope registry, on files or in a ``BaseStore``.

Embedded profile: ``<data-dir>/users/<user key>/threads.jsonl``, one line per thread the user
joined (``{"user_id", "thread_id", "joined"}``), appended durably (a torn last line after a
crash is skipped: the thread is registered again by its next turn). Two processes of one user
may append at once; a thread listed twice is read once.

``postgres`` profile: one item per thread under the namespace
``("langgraph_topics", "users", <user key>)`` of the shared store, key the thread's label.

Only the threads' *names* live here: each thread's data stays in its own stores, so deleting
a registry never loses a message, and a registry lost with its file is rebuilt by ``migrate``.

It also knows which threads were active last, so that a ``user``-scope turn reads only the
``Settings.scope_threads`` most recently active others without opening every thread
(``enter``, ``recent``). A thread's activity is its last ``user``-scope turn that changed the
order (a turn on the thread already first writes nothing), else when it joined. The order is
a hint, not data: it is written without ``fsync`` to ``active.json`` beside the registry file
(embedded; the last of two processes writing at once wins), or as the item's ``active`` field
(``postgres``); lost or damaged, threads count from when they joined.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, TypedDict

from langgraph.store.base import BaseStore

from langgraph_topics.errors import first_line
from langgraph_topics.scope.threads import check_user_id, user_key
from langgraph_topics.stores.base_store_topics import NAMESPACE_PREFIX
from langgraph_topics.stores.durable import append_durably, fsync_directory
from langgraph_topics.thread_ids import check_thread_id, thread_key

log = logging.getLogger(__name__)

USERS_DIR = "users"
THREADS_FILE = "threads.jsonl"
ACTIVE_FILE = "active.json"
USERS_LABEL = "users"


class RegisteredThread(TypedDict):
    """One thread of a user, as the registry records it."""

    user_id: str
    thread_id: str
    """The thread id as the user named it (not the scoped id it is stored under)."""
    joined: str
    """When the registry first recorded it (ISO 8601, UTC)."""


class ScopeRegistry(Protocol):
    """The threads of each user."""

    def threads(self, user_id: str) -> list[RegisteredThread]:
        """The user's threads, in the order they joined, each once."""
        ...

    def add(self, user_id: str, thread_id: str) -> None:
        """Record ``thread_id`` as one of the user's threads (nothing when it is already)."""
        ...

    def recent(self, user_id: str) -> list[str]:
        """The user's threads, the most recently active first (``by_activity``)."""
        ...

    def enter(self, user_id: str, thread_id: str) -> list[str]:
        """Record a ``user``-scope turn on ``thread_id`` (registering it if new).

        Returns:
            The user's threads, the most recently active first: ``thread_id`` first. The
            registry is read once for both (the turn's reading of the other threads needs it).
        """
        ...

    def remove_user(self, user_id: str) -> None:
        """Delete the user's registry (their threads' data is deleted by ``forget``)."""
        ...

    def holds(self, user_id: str) -> bool:
        """Whether anything of the user's registry is stored."""
        ...


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _once(entries: Iterable[RegisteredThread]) -> list[RegisteredThread]:
    seen: dict[str, RegisteredThread] = {}
    for entry in entries:
        seen.setdefault(entry["thread_id"], entry)
    return list(seen.values())


def by_activity(threads: Sequence[RegisteredThread], active: Mapping[str, str]) -> list[str]:
    """The thread ids of ``threads``, the most recently active first.

    A thread's activity is its time in ``active`` (thread id → ISO time, UTC), else when it
    joined; of two at the same time, the one that joined later comes first.
    """
    ranked = sorted(
        enumerate(threads),
        key=lambda p: (max(active.get(p[1]["thread_id"], ""), p[1]["joined"]), p[0]),
        reverse=True,
    )
    return [entry["thread_id"] for _, entry in ranked]


def _entered(
    threads: list[RegisteredThread], active: dict[str, str], thread_id: str
) -> tuple[list[str], bool]:
    """The order after a turn on ``thread_id``, and whether its activity must be recorded.

    A thread already first is not recorded again (the common case: several turns in a row
    on one thread write nothing).
    """
    order = by_activity(threads, active)
    if order and order[0] == thread_id:
        return order, False
    return [thread_id, *(t for t in order if t != thread_id)], True


class FileScopeRegistry:
    """The embedded profile's registry: one small append-only file per user."""

    def __init__(self, data_dir: Path) -> None:
        self.root = Path(data_dir) / USERS_DIR

    def user_directory(self, user_id: str) -> Path:
        """The user's directory (its name is the user's key: readable, collision-free)."""
        return self.root / user_key(user_id)

    def threads(self, user_id: str) -> list[RegisteredThread]:
        """The user's threads, in the order they joined, each once."""
        path = self.user_directory(user_id) / THREADS_FILE
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return []
        entries: list[RegisteredThread] = []
        for line in raw.split(b"\n"):
            entry = _parsed(line)
            # A line of another user cannot be here (the key is a hash of the id), but a
            # registry copied by hand could hold one: it is never read as this user's.
            if entry is not None and entry["user_id"] == user_id:
                entries.append(entry)
        return _once(entries)

    def add(self, user_id: str, thread_id: str) -> None:
        """Record ``thread_id`` as one of the user's threads (nothing when it is already)."""
        check_thread_id(thread_id)
        if any(t["thread_id"] == thread_id for t in self.threads(user_id)):
            return
        self._append(user_id, thread_id)

    def _append(self, user_id: str, thread_id: str) -> RegisteredThread:
        directory = self.user_directory(user_id)
        if not directory.is_dir():
            directory.mkdir(parents=True, exist_ok=True)
            fsync_directory(directory.parent)
        entry: RegisteredThread = {"user_id": user_id, "thread_id": thread_id, "joined": _now()}
        line = json.dumps(entry, ensure_ascii=True) + "\n"
        append_durably(directory / THREADS_FILE, line.encode("ascii"))
        return entry

    def recent(self, user_id: str) -> list[str]:
        """The user's threads, the most recently active first (``by_activity``)."""
        return by_activity(self.threads(user_id), self._active(user_id))

    def enter(self, user_id: str, thread_id: str) -> list[str]:
        """Record a ``user``-scope turn on ``thread_id`` (registering it if new).

        Returns:
            The user's threads, the most recently active first: ``thread_id`` first.
        """
        check_thread_id(thread_id)
        threads = self.threads(user_id)
        if not any(t["thread_id"] == thread_id for t in threads):
            threads.append(self._append(user_id, thread_id))  # joined now: the newest
        active = self._active(user_id)
        order, changed = _entered(threads, active, thread_id)
        if changed:
            self._write_active(user_id, {**active, thread_id: _now()})
        return order

    def _active(self, user_id: str) -> dict[str, str]:
        """The recorded activity of the user's threads (empty when none, or unreadable)."""
        try:
            value = json.loads((self.user_directory(user_id) / ACTIVE_FILE).read_bytes())
        except (OSError, ValueError):
            return {}
        if not isinstance(value, dict):
            return {}
        return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}

    def _write_active(self, user_id: str, active: Mapping[str, str]) -> None:
        """Replace ``active.json`` (a hint: no ``fsync``; a failed write only loses the order).

        Each writer has its own scratch file, so that two processes never write into one.
        """
        path = self.user_directory(user_id) / ACTIVE_FILE
        scratch = path.with_name(f".{ACTIVE_FILE}.{os.getpid()}.{threading.get_ident()}")
        try:
            scratch.write_text(json.dumps(active, ensure_ascii=True), "ascii")
            os.replace(scratch, path)
        except OSError as error:
            scratch.unlink(missing_ok=True)
            log.warning("user scope: the threads' activity not recorded: %s", first_line(error))

    def remove_user(self, user_id: str) -> None:
        """Delete the user's registry."""
        directory = self.user_directory(user_id)
        if directory.exists():
            shutil.rmtree(directory)
            fsync_directory(self.root)

    def holds(self, user_id: str) -> bool:
        """Whether anything of the user's registry is stored."""
        return self.user_directory(user_id).exists()


def _parsed(line: bytes) -> RegisteredThread | None:
    """A registry line, or None for a blank, torn or foreign one."""
    if not line.strip():
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    user_id, thread_id, joined = value.get("user_id"), value.get("thread_id"), value.get("joined")
    if not (isinstance(user_id, str) and isinstance(thread_id, str) and isinstance(joined, str)):
        return None
    return {"user_id": user_id, "thread_id": thread_id, "joined": joined}


def user_namespace(user_id: str) -> tuple[str, ...]:
    """The ``BaseStore`` namespace of a user's registry."""
    return (NAMESPACE_PREFIX, USERS_LABEL, user_key(user_id))


class StoreScopeRegistry:
    """The ``postgres`` profile's registry: items in the shared store, one per thread."""

    PAGE = 500

    def __init__(self, store: BaseStore) -> None:
        self.store = store

    def threads(self, user_id: str) -> list[RegisteredThread]:
        """The user's threads, in the order they joined, each once."""
        return self._entries(user_id)[0]

    def _entries(self, user_id: str) -> tuple[list[RegisteredThread], dict[str, str]]:
        """The user's threads in the order they joined, and their recorded activity."""
        namespace = user_namespace(check_user_id(user_id))
        entries: list[tuple[str, datetime, RegisteredThread]] = []
        active: dict[str, str] = {}
        offset = 0
        while True:
            page = self.store.search(namespace, limit=self.PAGE, offset=offset)
            for item in page:
                entry = _parsed(json.dumps(item.value).encode("utf-8"))
                if entry is not None and entry["user_id"] == user_id:
                    entries.append((entry["joined"], item.created_at, entry))
                    if isinstance(when := item.value.get("active"), str):
                        active[entry["thread_id"]] = when
            if len(page) < self.PAGE:
                break
            offset += self.PAGE
        entries.sort(key=lambda e: (e[0], e[1]))
        return _once(e[2] for e in entries), active

    def recent(self, user_id: str) -> list[str]:
        """The user's threads, the most recently active first (``by_activity``)."""
        return by_activity(*self._entries(user_id))

    def enter(self, user_id: str, thread_id: str) -> list[str]:
        """Record a ``user``-scope turn on ``thread_id`` (registering it if new).

        Returns:
            The user's threads, the most recently active first: ``thread_id`` first.
        """
        check_thread_id(thread_id)
        threads, active = self._entries(user_id)
        known = next((t for t in threads if t["thread_id"] == thread_id), None)
        if known is None:
            self.add(user_id, thread_id)  # joined now: the newest
            return [thread_id, *by_activity(threads, active)]
        order, changed = _entered(threads, active, thread_id)
        if changed:
            value = {**known, "active": _now()}
            self.store.put(user_namespace(user_id), thread_key(thread_id), dict(value), index=False)
        return order

    def add(self, user_id: str, thread_id: str) -> None:
        """Record ``thread_id`` as one of the user's threads (nothing when it is already)."""
        namespace = user_namespace(check_user_id(user_id))
        key = thread_key(check_thread_id(thread_id))
        if self.store.get(namespace, key) is not None:
            return
        value = {"user_id": user_id, "thread_id": thread_id, "joined": _now()}
        self.store.put(namespace, key, value, index=False)

    def remove_user(self, user_id: str) -> None:
        """Delete the user's registry."""
        namespace = user_namespace(check_user_id(user_id))
        while True:
            page = self.store.search(namespace, limit=self.PAGE)
            if not page:
                return
            for item in page:
                self.store.delete(namespace, item.key)

    def holds(self, user_id: str) -> bool:
        """Whether anything of the user's registry is stored."""
        return bool(self.store.search(user_namespace(check_user_id(user_id)), limit=1))
