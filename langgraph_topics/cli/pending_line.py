"""The chat line being answered, kept on disk until its answer has been printed.

Every ``chat`` process is a *session* of its thread with two files in the thread's directory:

``pending-chat-<session>.lock``
    Locked (``flock``) by the session for its whole life. The kernel lets go of the lock when
    the process ends, however it ends, so a lock that can be taken is a dead session's: unlike
    a process id, which the system gives to another process sooner or later, it cannot be
    mistaken for a live writer. The file is created under another name and renamed once
    locked, so no one ever sees it unlocked while its session lives.
``pending-chat-<session>.json``
    The line the session is answering (atomically and fsynced), with the message id the line
    is sent with; removed once the answer is printed.

The next ``chat`` of the thread settles every line a dead session left (``abandoned_lines`` and
``judge``), by the line's message id, never by its text (a line typed twice is two lines):

- the thread holds the message, followed by an answer: the turn finished but its answer was
  never shown, so that answer is printed, marked as recovered;
- the thread holds it as its newest user message, unanswered: the turn stopped half-way; a
  one-line notice says so and the turn is run again on the state as it is (the line is not
  added a second time);
- the thread holds it, but later turns followed (or it has been split into a topic since):
  it was answered; a one-line notice says so;
- the thread does not hold it: the process died before the turn was saved; a one-line notice
  says so and the line is answered now, with the same message id.

A session's own lines, and those of sessions still running (another terminal on the same
thread), are left alone. One session's file cannot overwrite another's line. The locks are
``filelock``'s descriptor locks (``stores.fd_locks``); renaming a locked file into place and
removing a dead session's files while holding them need POSIX files (Windows refuses both).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langgraph_topics.services import thread_directory
from langgraph_topics.state.messages import text_of
from langgraph_topics.stores.durable import fsync_directory, replace_durably
from langgraph_topics.stores.fd_locks import held_by_another, try_lock, unlock

PREFIX = "pending-chat-"
LEGACY_FILE = "pending-chat-line.json"
"""The single pending file of earlier versions (no message id): reported, never re-sent."""
_LOCKING = ".locking"
"""A session's lock file before it is locked and renamed (never seen unlocked)."""


def new_message_id() -> str:
    """A fresh message id, of the shape ``TopicMemory.chat`` gives its messages."""
    return f"msg-{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True)
class PendingLine:
    """One chat line handed to the memory and not yet answered on screen."""

    text: str
    message_id: str
    """The id of the ``HumanMessage`` the line is sent as: what tells it from a repeat."""
    pid: int
    """The ``chat`` process that was answering it (for a person reading the file only)."""
    started_at: str


def _session_files(directory: Path, session: str) -> tuple[Path, Path]:
    """A session's lock file and pending-line file."""
    return directory / f"{PREFIX}{session}.lock", directory / f"{PREFIX}{session}.json"


def read_pending(path: Path) -> PendingLine | None:
    """The pending line in ``path``, or None when there is none (or the file is not ours)."""
    try:
        raw: Any = json.loads(path.read_text("utf-8"))
        return PendingLine(
            text=str(raw["text"]),
            message_id=str(raw["message_id"]),
            pid=int(raw["pid"]),
            started_at=str(raw["started_at"]),
        )
    except (OSError, ValueError, TypeError, KeyError):  # none, or not a line of ours
        return None


def _try_lock(path: Path) -> int | None:
    """An open descriptor holding ``path``'s lock, or None: held by a live session, or gone.

    The file is never created here: a lock file that is missing belongs to no session.
    """
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return None
    try:
        taken = try_lock(fd)
    except BaseException:
        os.close(fd)
        raise
    if not taken:
        os.close(fd)
        return None
    return fd


def _unlock(fd: int) -> None:
    try:
        unlock(fd)
    finally:
        os.close(fd)


class ChatSession:
    """A ``chat`` process's session of a thread: its lock, and the line it is answering.

    Args:
        directory: The thread's directory (``pending_directory``).
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.session = uuid.uuid4().hex
        self.lock_path, self.path = _session_files(self.directory, self.session)
        self._fd: int | None = None

    def __enter__(self) -> ChatSession:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _open(self) -> None:
        """Create and lock the session's lock file.

        Done at the first line: a chat that sends nothing leaves no file and no directory.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        making = self.lock_path.with_name(self.lock_path.name + _LOCKING)
        fd = os.open(making, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            if not try_lock(fd):  # a new file: no one else holds it
                raise OSError(f"{making}: a new lock file is locked by another process")
            os.replace(making, self.lock_path)
        except BaseException:
            making.unlink(missing_ok=True)
            os.close(fd)
            raise
        self._fd = fd

    def close(self) -> None:
        """End the session; a line still pending (its turn failed) stays for the next chat."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        if not self.path.exists():
            self.lock_path.unlink(missing_ok=True)
        _unlock(fd)

    def write(self, text: str, message_id: str | None = None) -> PendingLine:
        """Record ``text`` as being answered: the file is complete on disk, or not there at all.

        Args:
            text: The line.
            message_id: Its message id when it has one already (a line recovered from a dead
                session keeps its own); a new one otherwise.
        """
        if self._fd is None:
            self._open()
        entry = PendingLine(
            text=text,
            message_id=message_id or new_message_id(),
            pid=os.getpid(),
            started_at=datetime.now(UTC).isoformat(),
        )
        replace_durably(
            self.path, json.dumps(asdict(entry), ensure_ascii=False).encode("utf-8"), cached=False
        )
        return entry

    def clear(self) -> None:
        """Forget the pending line once its answer is shown (or it was refused unsent)."""
        self.path.unlink(missing_ok=True)


def pending_directory(data_dir: Path, thread_id: str) -> Path:
    """Where the sessions' files of a thread live (the thread's directory under ``data_dir``)."""
    return thread_directory(Path(data_dir), thread_id)


@dataclass(frozen=True)
class Abandoned:
    """A line a dead session left, held (locked) by this process while it is settled."""

    entry: PendingLine
    path: Path
    lock_path: Path

    def forget(self) -> None:
        """Remove the dead session's files (its line is answered, reported or taken over)."""
        _remove(self.path, self.lock_path)


def _remove(path: Path, lock_path: Path) -> None:
    # The pending file goes first: a lock file without one is only swept, never settled.
    path.unlink(missing_ok=True)
    lock_path.unlink(missing_ok=True)
    fsync_directory(path.parent)


def live_sessions(directory: Path) -> list[Path]:
    """The lock files of the thread's ``chat`` sessions still running (their lock is held)."""
    return [p for p in sorted(directory.glob(f"{PREFIX}*.lock")) if held_by_another(p)]


@contextmanager
def abandoned_lines(directory: Path) -> Iterator[list[Abandoned]]:
    """The lines of every dead session of the thread, oldest first, locked while settled.

    Holding each dead session's lock keeps two ``chat`` processes starting at once from both
    answering one line. Lock files of dead sessions that left no line are removed, and an
    unreadable pending file (torn by hand; ours are written whole) is removed with them.
    """
    held: list[tuple[int, Path]] = []
    found: list[Abandoned] = []
    try:
        for lock_path in sorted(directory.glob(f"{PREFIX}*.lock")):
            fd = _try_lock(lock_path)
            if fd is None:  # a live session's, or removed meanwhile by another chat
                continue
            path = lock_path.with_suffix(".json")
            entry = read_pending(path)
            if entry is None:
                _remove(path, lock_path)
                _unlock(fd)
                continue
            held.append((fd, lock_path))
            found.append(Abandoned(entry, path, lock_path))
        yield sorted(found, key=lambda line: line.entry.started_at)
    finally:
        for fd, _ in held:
            _unlock(fd)


def legacy_line(directory: Path) -> str | None:
    """The text an earlier version's ``pending-chat-line.json`` held, removing the file.

    That file named its line by text and time only, so whether the thread holds it cannot be
    told for sure: it is reported (the caller names it), never sent again.
    """
    path = directory / LEGACY_FILE
    try:
        raw: Any = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        raw = {}
    path.unlink(missing_ok=True)
    text = raw.get("text") if isinstance(raw, dict) else None
    return str(text) if text is not None else ""


Outcome = Literal["answered", "asked", "followed", "absent"]


@dataclass(frozen=True)
class Settled:
    """What became of a pending line, judged by its message id."""

    entry: PendingLine
    outcome: Outcome
    """``answered``: the thread holds its answer (``answer``); ``asked``: it is the thread's
    newest user message, unanswered; ``followed``: the thread holds it and later turns (or a
    split) followed; ``absent``: the thread does not hold it."""
    answer: str | None = None


def judge(
    messages: Sequence[BaseMessage],
    held: Callable[[str], bool],
    entry: PendingLine,
) -> Settled:
    """Find the pending line in the thread by its message id.

    Args:
        messages: The thread's checkpointed messages (its working set).
        held: Whether the thread holds a message id elsewhere (its topics), asked only when
            the working set does not hold the line.
        entry: The pending line.
    """
    index = next((i for i, m in enumerate(messages) if m.id == entry.message_id), None)
    if index is None:
        return Settled(entry, "followed" if held(entry.message_id) else "absent")
    answer: str | None = None
    for message in messages[index + 1 :]:
        if isinstance(message, HumanMessage):
            return Settled(entry, "answered" if answer else "followed", answer)
        if isinstance(message, AIMessage) and not message.tool_calls and text_of(message).strip():
            answer = text_of(message)
    return Settled(entry, "answered" if answer else "asked", answer)
