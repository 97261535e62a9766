"""Which threads belong to a user: the scope registry, on files or in a ``BaseStore``.

Embedded profile: ``<data-dir>/users/<user key>/threads.jsonl``, one line per thread the user
joined (``{"user_id", "thread_id", "joined"}``), appended durably (a torn last line after a
crash is skipped: the thread is registered again by its next turn). Two processes of one user
may append at once; a thread listed twice is read once.

``postgres`` profile: one item per thread under the namespace
``("langgraph_topics", "users", <user key>)`` of the shared store, key the thread's label.

Each thread also records its checkpoints' *home* on its first run (``checkpoint_home.py``: a
``checkpoints`` field, on the entry's line or a later line of its own; on the item), and a run
from the other home is refused. A thread first run by a path that does not register it (a
graph run reaching the first node without the graph's ``stream``) gets a line or item with no
``joined``: a record, not one of the user's threads. Two processes recording one thread's
first run at once: the first line wins and the other run is refused (embedded); the last
write wins (``postgres``).

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypedDict

from langgraph.store.base import BaseStore

from langgraph_topics.errors import InputError, first_line
from langgraph_topics.scope.checkpoint_home import (
    CHECKPOINTS_KEY,
    CheckpointHome,
    must_record,
    recorded_home,
    refusal,
)
from langgraph_topics.scope.threads import check_user_id, user_key
from langgraph_topics.stores.base_store_topics import NAMESPACE_PREFIX
from langgraph_topics.stores.durable import append_durably, fsync_directory
from langgraph_topics.thread_ids import check_thread_id, thread_key

log = logging.getLogger(__name__)

USERS_DIR = "users"
THREADS_FILE = "threads.jsonl"
ACTIVE_FILE = "active.json"
USERS_LABEL = "users"


def unheld() -> bool:
    """``held`` for a run that knows nothing of its checkpoints: nothing recorded on doubt."""
    return False


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

    def add(
        self,
        user_id: str,
        thread_id: str,
        home: CheckpointHome | None = None,
        held: Callable[[], bool] = unheld,
    ) -> None:
        """Record ``thread_id`` as one of the user's threads (nothing when it is already).

        With ``home``, a run of the thread from there: refused when the thread's recorded
        home differs, recorded when it has none (``checkpoint_home.must_record``).
        """
        ...

    def claim(
        self, user_id: str, thread_id: str, home: CheckpointHome, held: Callable[[], bool] = unheld
    ) -> None:
        """``add``'s check of a run from ``home``, without registering the thread."""
        ...

    def home(self, user_id: str, thread_id: str) -> CheckpointHome | None:
        """The thread's recorded home (None: none recorded)."""
        ...

    def recent(self, user_id: str) -> list[str]:
        """The user's threads, the most recently active first (``by_activity``)."""
        ...

    def enter(
        self,
        user_id: str,
        thread_id: str,
        home: CheckpointHome | None = None,
        held: Callable[[], bool] = unheld,
    ) -> list[str]:
        """Record a ``user``-scope turn on ``thread_id`` (registering it if new).

        With ``home``, ``add``'s check of the run too (one read of the registry for all).

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


class _RunsChecked:
    """``add`` and ``claim`` of both registries: one settling of a thread and its home each."""

    def _settle(
        self,
        user_id: str,
        thread_id: str,
        home: CheckpointHome | None,
        held: Callable[[], bool],
        *,
        register: bool,
    ) -> object:
        raise NotImplementedError

    def add(
        self,
        user_id: str,
        thread_id: str,
        home: CheckpointHome | None = None,
        held: Callable[[], bool] = unheld,
    ) -> None:
        """Record ``thread_id`` as one of the user's threads (nothing when it is already).

        With ``home``, a run of the thread from there: refused when the thread's recorded
        home differs, recorded when it has none (``checkpoint_home.must_record``).
        """
        self._settle(user_id, thread_id, home, held, register=True)

    def claim(
        self, user_id: str, thread_id: str, home: CheckpointHome, held: Callable[[], bool] = unheld
    ) -> None:
        """``add``'s check of a run from ``home``, without registering the thread."""
        self._settle(user_id, thread_id, home, held, register=False)


class FileScopeRegistry(_RunsChecked):
    """The embedded profile's registry: one small append-only file per user."""

    def __init__(self, data_dir: Path) -> None:
        self.root = Path(data_dir) / USERS_DIR

    def user_directory(self, user_id: str) -> Path:
        """The user's directory (its name is the user's key: readable, collision-free)."""
        return self.root / user_key(user_id)

    def threads(self, user_id: str) -> list[RegisteredThread]:
        """The user's threads, in the order they joined, each once."""
        return self._read(user_id)[0]

    def _read(self, user_id: str) -> tuple[list[RegisteredThread], dict[str, CheckpointHome]]:
        """The user's threads (in the order they joined, each once) and their recorded homes."""
        path = self.user_directory(user_id) / THREADS_FILE
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return [], {}
        entries: list[RegisteredThread] = []
        homes: dict[str, CheckpointHome] = {}
        for line in raw.split(b"\n"):
            value = _line_value(line)
            # A line of another user cannot be here (the key is a hash of the id), but a
            # registry copied by hand could hold one: it is never read as this user's.
            if value is None or value.get("user_id") != user_id:
                continue
            entry = _entry(value)
            if entry is not None:
                entries.append(entry)
            home = recorded_home(value.get(CHECKPOINTS_KEY))
            if home is not None and isinstance(value.get("thread_id"), str):
                homes.setdefault(value["thread_id"], home)  # the first recorded wins
        return _once(entries), homes

    def home(self, user_id: str, thread_id: str) -> CheckpointHome | None:
        """The thread's recorded home (None: none recorded)."""
        return self._read(user_id)[1].get(thread_id)

    def _settle(
        self,
        user_id: str,
        thread_id: str,
        home: CheckpointHome | None,
        held: Callable[[], bool],
        *,
        register: bool,
    ) -> list[RegisteredThread]:
        """Register the thread (``register``), check and record ``home``; the user's threads.

        The registry is read once (and again only after recording a home).
        """
        check_thread_id(thread_id)
        threads, homes = self._read(user_id)
        registered = any(t["thread_id"] == thread_id for t in threads)
        record = home is not None and must_record(
            user_id, thread_id, home, homes.get(thread_id), registered=registered, held=held
        )
        joins = register and not registered
        if not (joins or record):
            return threads
        entry = self._append(user_id, thread_id, joins=joins, home=home if record else None)
        if record and home is not None:
            self._confirm(user_id, thread_id, home)
        return [*threads, entry] if entry is not None else threads  # joined now: the newest

    def _append(
        self, user_id: str, thread_id: str, *, joins: bool, home: CheckpointHome | None
    ) -> RegisteredThread | None:
        """Append the thread's line: it joins the user's threads, or records its home, or both."""
        directory = self.user_directory(user_id)
        if not directory.is_dir():
            directory.mkdir(parents=True, exist_ok=True)
            fsync_directory(directory.parent)
        value: dict[str, str] = {"user_id": user_id, "thread_id": thread_id}
        entry: RegisteredThread | None = None
        if joins:
            entry = {"user_id": user_id, "thread_id": thread_id, "joined": _now()}
            value["joined"] = entry["joined"]
        if home is not None:
            value[CHECKPOINTS_KEY] = home
        line = json.dumps(value, ensure_ascii=True) + "\n"
        append_durably(directory / THREADS_FILE, line.encode("ascii"))
        return entry

    def _confirm(self, user_id: str, thread_id: str, home: CheckpointHome) -> None:
        """Refuse the run when another process recorded another home first (its line wins)."""
        first = self._read(user_id)[1].get(thread_id)
        if first is not None and first != home:
            raise InputError(refusal(user_id, thread_id, first))

    def recent(self, user_id: str) -> list[str]:
        """The user's threads, the most recently active first (``by_activity``)."""
        return by_activity(self.threads(user_id), self._active(user_id))

    def enter(
        self,
        user_id: str,
        thread_id: str,
        home: CheckpointHome | None = None,
        held: Callable[[], bool] = unheld,
    ) -> list[str]:
        """Record a ``user``-scope turn on ``thread_id`` (registering it if new).

        With ``home``, ``add``'s check of the run too (one read of the registry for all).

        Returns:
            The user's threads, the most recently active first: ``thread_id`` first.
        """
        threads = self._settle(user_id, thread_id, home, held, register=True)
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


def _line_value(line: bytes) -> dict[str, Any] | None:
    """A registry line's object, or None for a blank or torn one."""
    if not line.strip():
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _entry(value: Mapping[str, Any]) -> RegisteredThread | None:
    """The thread a registry value registers (None: a record of its home only, or foreign)."""
    user_id, thread_id, joined = value.get("user_id"), value.get("thread_id"), value.get("joined")
    if not (isinstance(user_id, str) and isinstance(thread_id, str) and isinstance(joined, str)):
        return None
    return {"user_id": user_id, "thread_id": thread_id, "joined": joined}


def user_namespace(user_id: str) -> tuple[str, ...]:
    """The ``BaseStore`` namespace of a user's registry."""
    return (NAMESPACE_PREFIX, USERS_LABEL, user_key(user_id))


class StoreScopeRegistry(_RunsChecked):
    """The ``postgres`` profile's registry: items in the shared store, one per thread."""

    PAGE = 500

    def __init__(self, store: BaseStore) -> None:
        self.store = store

    def threads(self, user_id: str) -> list[RegisteredThread]:
        """The user's threads, in the order they joined, each once."""
        return self._entries(user_id)[0]

    def _entries(
        self, user_id: str
    ) -> tuple[list[RegisteredThread], dict[str, str], dict[str, dict[str, Any]]]:
        """The user's threads in the order they joined, their activity, and their items' values."""
        namespace = user_namespace(check_user_id(user_id))
        entries: list[tuple[str, datetime, RegisteredThread]] = []
        active: dict[str, str] = {}
        values: dict[str, dict[str, Any]] = {}
        offset = 0
        while True:
            page = self.store.search(namespace, limit=self.PAGE, offset=offset)
            for item in page:
                entry = _entry(item.value)
                if entry is not None and entry["user_id"] == user_id:
                    entries.append((entry["joined"], item.created_at, entry))
                    values[entry["thread_id"]] = dict(item.value)
                    if isinstance(when := item.value.get("active"), str):
                        active[entry["thread_id"]] = when
            if len(page) < self.PAGE:
                break
            offset += self.PAGE
        entries.sort(key=lambda e: (e[0], e[1]))
        return _once(e[2] for e in entries), active, values

    def recent(self, user_id: str) -> list[str]:
        """The user's threads, the most recently active first (``by_activity``)."""
        return by_activity(*self._entries(user_id)[:2])

    def enter(
        self,
        user_id: str,
        thread_id: str,
        home: CheckpointHome | None = None,
        held: Callable[[], bool] = unheld,
    ) -> list[str]:
        """Record a ``user``-scope turn on ``thread_id`` (registering it if new).

        With ``home``, ``add``'s check of the run too (one read of the registry for all).

        Returns:
            The user's threads, the most recently active first: ``thread_id`` first.
        """
        check_thread_id(thread_id)
        threads, active, values = self._entries(user_id)
        known = values.get(thread_id)
        if known is None:
            self.add(user_id, thread_id, home, held)  # joined now: the newest
            return [thread_id, *by_activity(threads, active)]
        record = home is not None and must_record(
            user_id,
            thread_id,
            home,
            recorded_home(known.get(CHECKPOINTS_KEY)),
            registered=True,
            held=held,
        )
        order, changed = _entered(threads, active, thread_id)
        if changed or record:
            value = {**known, "active": _now()} if changed else dict(known)
            if record:
                value[CHECKPOINTS_KEY] = home
            self.store.put(user_namespace(user_id), thread_key(thread_id), value, index=False)
        return order

    def home(self, user_id: str, thread_id: str) -> CheckpointHome | None:
        """The thread's recorded home (None: none recorded)."""
        return recorded_home(self._value(user_id, thread_id).get(CHECKPOINTS_KEY))

    def _value(self, user_id: str, thread_id: str) -> dict[str, Any]:
        """The value of the thread's item (``{}``: none, or a foreign one, never read as it)."""
        namespace = user_namespace(check_user_id(user_id))
        item = self.store.get(namespace, thread_key(check_thread_id(thread_id)))
        value: dict[str, Any] = dict(item.value) if item is not None else {}
        return value if value.get("user_id") == user_id else {}

    def _settle(
        self,
        user_id: str,
        thread_id: str,
        home: CheckpointHome | None,
        held: Callable[[], bool],
        *,
        register: bool,
    ) -> None:
        """Register the thread (``register``), check and record ``home``: its one item."""
        value = self._value(user_id, thread_id)
        registered = _entry(value) is not None
        record = home is not None and must_record(
            user_id,
            thread_id,
            home,
            recorded_home(value.get(CHECKPOINTS_KEY)),
            registered=registered,
            held=held,
        )
        joins = register and not registered
        if not (joins or record):
            return
        value.update(user_id=user_id, thread_id=thread_id)
        if joins:
            value["joined"] = _now()
        if record:
            value[CHECKPOINTS_KEY] = home
        self.store.put(user_namespace(user_id), thread_key(thread_id), value, index=False)

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
