"""Scratch files of whole-file replacements, and the ones a killed writer left behind.

``replace_durably`` writes the new content beside the file, as ``.<name>.<pid>.tmp``, then
renames it over the file. A process killed between the two leaves the scratch file: nothing
reads it, but a decoded copy's is as large as its topic's records, and each crash could add
one. Opening a thread's stores removes those of processes that are gone.

A scratch file is taken for abandoned only when its writer's process no longer exists here
and it has not been written for ``MIN_AGE_SECONDS``: a writer on another machine, or in
another container sharing the directory, has a process id that means nothing here, and no
replacement takes a minute between writing its scratch file and renaming it.
"""

from __future__ import annotations

import logging
import os
import re
import time
from pathlib import Path

log = logging.getLogger(__name__)

SCRATCH_SUFFIX = ".tmp"
MIN_AGE_SECONDS = 60.0
_SCRATCH_NAME = re.compile(r"^\..+\.(?P<pid>\d+)" + re.escape(SCRATCH_SUFFIX) + "$")


def scratch_path(path: Path) -> Path:
    """Where this process writes the replacement of ``path`` before renaming it."""
    return path.with_name(f".{path.name}.{os.getpid()}{SCRATCH_SUFFIX}")


def writer_pid(path: Path) -> int | None:
    """The process id a scratch file's name carries (``None``: not a scratch file's name)."""
    match = _SCRATCH_NAME.match(path.name)
    return int(match["pid"]) if match else None


def process_exists(pid: int) -> bool:
    """Whether a process with this id runs on this machine (unsure counts as running)."""
    if pid == os.getpid():
        return True
    if os.name == "nt":  # os.kill(pid, 0) would terminate it there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # another user's process (EPERM), a pid out of range
        return True
    return True


def abandoned_scratch(root: Path, *, min_age: float = MIN_AGE_SECONDS) -> list[Path]:
    """The scratch files under ``root`` whose writer is gone, oldest writes first."""
    now = time.time()
    found: list[tuple[float, Path]] = []
    for path in root.rglob(f".*{SCRATCH_SUFFIX}"):
        pid = writer_pid(path)
        if pid is None or not path.is_file() or process_exists(pid):
            continue
        try:
            modified = path.stat().st_mtime
        except OSError:  # renamed or removed meanwhile
            continue
        if now - modified >= min_age:
            found.append((modified, path))
    return [path for _, path in sorted(found)]


def remove_abandoned_scratch(root: Path, *, min_age: float = MIN_AGE_SECONDS) -> int:
    """Remove the scratch files under ``root`` that killed writers left; how many were.

    A file that cannot be removed is left, with one warning: it costs disk, never data.
    """
    if not root.is_dir():
        return 0
    try:
        abandoned = abandoned_scratch(root, min_age=min_age)
    except OSError as error:  # an unreadable directory: the stores say so when they read it
        log.warning("%s: scratch files not looked for (%s)", root, error)
        return 0
    removed = 0
    for path in abandoned:
        try:
            path.unlink(missing_ok=True)
        except OSError as error:
            log.warning("%s: left in place, could not be removed (%s)", path, error)
            continue
        removed += 1
    if removed:
        log.info("%s: removed %d scratch file(s) of interrupted writes", root, removed)
    return removed
