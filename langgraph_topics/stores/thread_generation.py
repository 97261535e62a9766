"""A thread directory's generation marker: how a process learns that another one wrote there.

The stores of a thread answer from what they read when they were opened (the JSONL topic
store, the message index), so a process taking the thread's files lock must learn whether
another process wrote the thread since it last let go (``thread_locks``). It reads one small
file instead of looking at every file of the thread: ``<thread-dir>/.generation`` holds a
random token, which a process replaces **before** its first write of each hold of the lock
(``durable`` calls :func:`note_write` ahead of every append, replacement, truncation and
removal under a thread directory). A process that finds another token than the one it knew
when it last released the lock re-opens its stores.

Replaced before the write, never after: a process killed between its write and a later bump
would leave a change that no other process notices. A marker that is missing, empty or not a
token (a process killed while writing it) counts as changed, and is written anew. A write
under a thread directory that this process holds no lock of (a tool writing the stores
directly) replaces the marker every time. The marker is not fsynced: it only tells live
processes apart, and none survives a power cut.
"""

from __future__ import annotations

import os
import secrets
import threading
from dataclasses import dataclass
from pathlib import Path

MARKER_FILE = ".generation"
_TOKEN_BYTES = 16
_DEPTH = 4
"""How far above a written file its thread directory may be (``topics/archived/<month>/``)."""


@dataclass
class _Hold:
    """One files-lock hold of a thread directory, as this process sees it."""

    token: str | None
    """The marker's token as this hold left it (None: unknown, the next hold re-opens)."""
    bumped: bool = False
    """Whether this hold replaced the marker already (once per hold is enough)."""


_mutex = threading.Lock()
_holds: dict[str, _Hold] = {}
"""Thread directories whose files lock this process holds now."""
_marked: set[str] = set()
"""Thread directories known to have a marker (spares looking for one on every write)."""


def begin_hold(directory: Path) -> str | None:
    """Note that this process took the files lock of ``directory``; the marker's token.

    Returns:
        The token, or None when the marker was missing or unreadable (it is written anew).
    """
    key = os.path.abspath(directory)
    token = read_token(key)
    with _mutex:
        hold = _holds[key] = _Hold(token)
        _marked.add(key)
        if token is None:
            try:
                hold.token = _bump(key)
                hold.bumped = True
            except OSError:  # a read-only directory: every hold re-opens
                hold.token = None
    return token


def end_hold(directory: Path) -> str | None:
    """Note that this process lets go of the files lock; the token its stores now match.

    Returns:
        The token, or None when it is unknown (the next hold must re-open the stores).
    """
    with _mutex:
        hold = _holds.pop(os.path.abspath(directory), None)
    return None if hold is None else hold.token


def note_write(path: Path) -> None:
    """Replace the marker of ``path``'s thread directory, unless this hold did already.

    Called before the write. A path under no thread directory is left alone.

    Raises:
        OSError: The marker could not be written (then neither should the file be).
    """
    with _mutex:
        key = _thread_directory(os.path.abspath(path))
        if key is None:
            return
        hold = _holds.get(key)
        if hold is None:
            _bump(key)
        elif not hold.bumped:
            hold.token = None  # a failed bump below leaves the token unknown
            hold.token = _bump(key)
            hold.bumped = True


def read_token(directory: str | Path) -> str | None:
    """The marker's token, or None when it is missing or not a whole token."""
    try:
        with open(os.path.join(directory, MARKER_FILE), "rb") as handle:
            raw = handle.read(2 * _TOKEN_BYTES + 1)
    except OSError:
        return None
    text = raw.decode("ascii", "replace")
    if len(text) != 2 * _TOKEN_BYTES or any(c not in "0123456789abcdef" for c in text):
        return None
    return text


def _bump(key: str) -> str:
    token = secrets.token_hex(_TOKEN_BYTES)
    fd = os.open(os.path.join(key, MARKER_FILE), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, token.encode("ascii"))
    finally:
        os.close(fd)
    _marked.add(key)
    return token


def _thread_directory(path: str) -> str | None:
    """The thread directory above ``path``: one held or marked, else one with a marker."""
    current = os.path.dirname(path)
    candidates: list[str] = []
    for _ in range(_DEPTH):
        if current in _holds or current in _marked:
            return current
        candidates.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for candidate in candidates:
        if os.path.exists(os.path.join(candidate, MARKER_FILE)):
            _marked.add(candidate)
            return candidate
    return None
