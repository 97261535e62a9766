"""Which threads belong to a user: the scope registry, on files or in a ``BaseStore``.

Embedded profile: ``<data-dir>/users/<user key>/threads.jsonl``, one line per thread the user
joined (``{"user_id", "thread_id", "joined"}``), appended durably (a torn last line after a
crash is skipped: the thread is registered again by its next turn). Two processes of one user
may append at once; a thread listed twice is read once.

``postgres`` profile: one item per thread under the namespace
``("langgraph_topics", "users", <user key>)`` of the shared store, key the thread's label.

Only the threads' *names* live here: each thread's data stays in its own stores, so deleting
a registry never loses a message, and a registry lost with its file is rebuilt by ``migrate``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, TypedDict

from langgraph.store.base import BaseStore

from langgraph_topics.scope.threads import check_user_id, user_key
from langgraph_topics.stores.base_store_topics import NAMESPACE_PREFIX
from langgraph_topics.stores.durable import append_durably, fsync_directory
from langgraph_topics.thread_ids import check_thread_id, thread_key

USERS_DIR = "users"
THREADS_FILE = "threads.jsonl"
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
        directory = self.user_directory(user_id)
        if not directory.is_dir():
            directory.mkdir(parents=True, exist_ok=True)
            fsync_directory(directory.parent)
        entry: RegisteredThread = {"user_id": user_id, "thread_id": thread_id, "joined": _now()}
        line = json.dumps(entry, ensure_ascii=True) + "\n"
        append_durably(directory / THREADS_FILE, line.encode("ascii"))

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
        namespace = user_namespace(check_user_id(user_id))
        entries: list[tuple[str, datetime, RegisteredThread]] = []
        offset = 0
        while True:
            page = self.store.search(namespace, limit=self.PAGE, offset=offset)
            for item in page:
                entry = _parsed(json.dumps(item.value).encode("utf-8"))
                if entry is not None and entry["user_id"] == user_id:
                    entries.append((entry["joined"], item.created_at, entry))
            if len(page) < self.PAGE:
                break
            offset += self.PAGE
        entries.sort(key=lambda e: (e[0], e[1]))
        return _once(e[2] for e in entries)

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
