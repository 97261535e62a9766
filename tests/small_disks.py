"""A small real disk for the full-disk tests: a 4 MB tmpfs, and filling it (a pytest plugin)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def unmount(path: Path) -> None:
    """Unmount ``path``; lazily when this process still holds files there (an open memory)."""
    if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB tmpfs (skipped where mounting is impossible: not root, a container without it)."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount_point)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {made.stderr.decode().strip() or 'not permitted'}")
    try:
        yield mount_point
    finally:
        unmount(mount_point)


def fill(disk: Path, leave_bytes: int) -> Path:
    """Fill ``disk`` up to ``leave_bytes`` free; returns the filler file."""
    filler = disk / "filler"
    free = shutil.disk_usage(disk).free - leave_bytes
    with filler.open("wb") as handle:
        handle.write(b"\0" * max(0, free))
    return filler
