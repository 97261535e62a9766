"""The chat line being answered, kept on disk until its answer has been printed.

Before ``chat`` hands a line to the memory it writes it to ``pending-chat-line.json`` in the
thread's directory (atomically and fsynced); once the answer is printed the file is removed. A
process that dies in between (killed, a crash, a power cut, Ctrl-C) leaves the file behind, and
the next ``chat`` of that thread settles it (``settle``):

- the checkpoint already holds the line as its newest user message, followed by an answer:
  the turn finished but its answer was never shown, so that answer is printed, marked as
  recovered;
- the checkpoint holds the line as its newest message, unanswered: the turn stopped half-way;
  a one-line notice says so and the turn is run again on the state as it is (the line is not
  added a second time);
- the checkpoint does not hold it: the process died before the turn was saved; a one-line
  notice says so and the line is answered now.

A file written by a ``chat`` process that is still running (another terminal on the same thread)
is left alone.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langgraph_topics.services import thread_directory
from langgraph_topics.state.messages import TIMESTAMP_KEY, text_of
from langgraph_topics.stores.durable import replace_durably

PENDING_FILE = "pending-chat-line.json"
_CLOCK_SLACK = timedelta(seconds=2)
"""A user message stamped this long before the pending line was written is an older one."""


@dataclass(frozen=True)
class PendingLine:
    """One chat line handed to the memory and not yet answered on screen."""

    text: str
    pid: int
    """The ``chat`` process that was answering it."""
    started_at: str
    token: str
    """Tells this entry from a later one with the same text."""


def pending_path(data_dir: Path, thread_id: str) -> Path:
    """Where the pending line of a thread lives (the thread's directory under ``data_dir``)."""
    return thread_directory(Path(data_dir), thread_id) / PENDING_FILE


def write_pending(path: Path, text: str) -> PendingLine:
    """Record ``text`` as being answered: the file is complete on disk, or not there at all."""
    entry = PendingLine(
        text=text,
        pid=os.getpid(),
        started_at=datetime.now(UTC).isoformat(),
        token=uuid.uuid4().hex,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_durably(
        path, json.dumps(asdict(entry), ensure_ascii=False).encode("utf-8"), cached=False
    )
    return entry


def read_pending(path: Path) -> PendingLine | None:
    """The pending line, or None when there is none (or the file is not one of ours)."""
    try:
        raw: Any = json.loads(path.read_text("utf-8"))
        return PendingLine(
            text=str(raw["text"]),
            pid=int(raw["pid"]),
            started_at=str(raw["started_at"]),
            token=str(raw["token"]),
        )
    except (OSError, ValueError, TypeError, KeyError):  # none, or not a line of ours
        return None


def clear_pending(path: Path, entry: PendingLine) -> None:
    """Forget ``entry`` once its answer is shown (a newer entry in the file is kept)."""
    current = read_pending(path)
    if current is not None and current.token != entry.token:
        return
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def _running(pid: int) -> bool:
    """Whether another process with this id is alive (this process's own entries are stale)."""
    if pid == os.getpid() or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    except OSError:  # pragma: no cover - platforms without signal 0
        return False
    return True


def _stamped_before(message: BaseMessage, started_at: str) -> bool:
    """Whether the message was sent before the pending line was written (an older message)."""
    try:
        sent = datetime.fromisoformat(str(message.additional_kwargs[TIMESTAMP_KEY]))
        started = datetime.fromisoformat(started_at)
        return sent < started - _CLOCK_SLACK
    except (KeyError, TypeError, ValueError):  # no stamp, or naive vs aware: trust the text
        return False


@dataclass(frozen=True)
class Settled:
    """What became of a pending line, judged from the thread's checkpointed messages."""

    entry: PendingLine
    answer: str | None
    """The answer the checkpoint holds (the turn finished); None when it was not answered."""
    asked: bool
    """Whether the checkpoint holds the line itself (the turn stopped after saving it)."""


def judge(messages: Sequence[BaseMessage], entry: PendingLine) -> Settled:
    """Find the pending line among the newest messages: answered, asked only, or absent."""
    last_user = next(
        (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], HumanMessage)),
        None,
    )
    if (
        last_user is None
        or text_of(messages[last_user]).strip() != entry.text.strip()
        or _stamped_before(messages[last_user], entry.started_at)
    ):
        return Settled(entry, None, asked=False)
    answers = [
        m
        for m in messages[last_user + 1 :]
        if isinstance(m, AIMessage) and not m.tool_calls and text_of(m).strip()
    ]
    return Settled(entry, text_of(answers[-1]) if answers else None, asked=True)


def settle(
    path: Path,
    messages: Callable[[], Sequence[BaseMessage]],
) -> Settled | None:
    """Look at a pending line left by an earlier ``chat`` of the thread.

    Args:
        path: The thread's pending file (``pending_path``).
        messages: Reads the thread's checkpointed messages (called only when there is a line).

    Returns:
        None when there is nothing to settle (no file, an unreadable one, which is removed, or
        one that a running ``chat`` is answering); otherwise what ``judge`` found. A recovered
        answer's line is removed here; a line to answer again stays until its answer is shown.
    """
    if not path.exists():
        return None
    entry = read_pending(path)
    if entry is None:
        path.unlink(missing_ok=True)  # not ours, or torn by hand: nothing to recover
        return None
    if _running(entry.pid):
        return None
    found = judge(messages(), entry)
    if found.answer is not None:
        clear_pending(path, entry)
    return found
