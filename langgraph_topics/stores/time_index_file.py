"""The time index kept beside a thread's topic files (seed 000 §9: topics per period).

``topics/time-index.json`` holds ``{"version": 1, "days": {"YYYY-MM-DD": [topic ids]}}``, what
``time_index()`` answers, for readers that open no store (a backup, a script, another tool).
It is derived data: the store answers ``time_index()`` from its own index and never reads the
file back for that. The JSONL store rewrites it whole (``durable.replace_durably``) after a
write that changed the index (a split that gave a topic a new day, a division, a merge), so a
turn that changes no day writes nothing; opening the store rebuilds it when it is missing or
unreadable, as opening rebuilds a topic's catalog. It is the index of the store that wrote it
last: the branch that last changed topics, or every record on disk when an open rebuilt it
(the same, but for what another branch, or a write a crash cut short, left unseen). ``check``
notes when it differs from the checked branch's; the next change writes the branch's again.
"""

from __future__ import annotations

import errno
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from langgraph_topics.stores.durable import replace_durably

logger = logging.getLogger(__name__)

TIME_INDEX_FILE = "time-index.json"
"""Its name in the thread's ``topics/`` directory."""
_VERSION = 1
_FULL_DISK = (errno.ENOSPC, errno.EDQUOT)

TimeIndex = Mapping[str, Sequence[str]]
"""Topic ids per day (``YYYY-MM-DD``), days ascending."""


class DamagedTimeIndex(ValueError):
    """The file is there but holds no time index (a hand edit, a foreign tool)."""


def encode_time_index(index: TimeIndex) -> bytes:
    """The file's bytes, a day a line: the same index always gives the same bytes."""
    days = ",\n".join(f" {json.dumps(day)}: {json.dumps(list(ids))}" for day, ids in index.items())
    return f'{{"version": {_VERSION}, "days": {{\n{days}\n}}}}\n'.encode()


def read_time_index(path: Path) -> dict[str, list[str]] | None:
    """The index the file holds; None when there is no file.

    Raises:
        DamagedTimeIndex: The file is unreadable or is not a time index.
        OSError: It cannot be read at all (other than missing).
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        found = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as error:
        raise DamagedTimeIndex(f"{path}: not JSON ({error})") from None
    days = found.get("days") if isinstance(found, dict) else None
    if (
        not isinstance(found, dict)
        or found.get("version") != _VERSION
        or not isinstance(days, dict)
        or not all(
            isinstance(ids, list) and all(isinstance(i, str) for i in ids) for ids in days.values()
        )
    ):
        raise DamagedTimeIndex(f"{path}: not a version {_VERSION} time index")
    return {str(day): list(ids) for day, ids in days.items()}


def save_time_index(path: Path, index: TimeIndex, *, full_disk_fails: bool = False) -> None:
    """Write the file anew; a failure is logged, not raised (the topic files hold it all).

    The write that changed the index has succeeded by then: undoing it, or failing the turn,
    for derived data that the next change or the next open writes again would be wrong.

    Args:
        path: The file.
        index: What it is to hold.
        full_disk_fails: Raise a full disk (``OSError``) all the same: after a store write the
            turn's next writes meet it anyway, and its one error line then names it at once,
            instead of after more failures logged and gone on from.
    """
    try:
        replace_durably(path, encode_time_index(index), cached=False)
    except OSError as error:
        if full_disk_fails and error.errno in _FULL_DISK:
            raise
        logger.warning("%s: could not write the time index (%s); rebuilt later", path, error)


def mend_time_index(path: Path, index_of: Callable[[], TimeIndex]) -> None:
    """Rebuild a missing or unreadable file from ``index_of()`` (an open's check).

    A sound file costs one read: the index is made only when the file is to be written.

    Missing: written silently (a thread from before the file existed, a file deleted), unless
    the index is empty too. Unreadable: one warning, then written. A readable file is left as
    it is even when it differs: it may be another branch's, which that branch keeps.
    """
    try:
        if read_time_index(path) is not None:
            return
    except DamagedTimeIndex as error:
        logger.warning("%s; rebuilt from the topic files", error)
        save_time_index(path, index_of())
        return
    except OSError as error:
        logger.warning("%s: could not read the time index (%s)", path, error)
        return
    index = index_of()
    if index:  # nothing to keep about a thread without dated messages yet
        save_time_index(path, index)
