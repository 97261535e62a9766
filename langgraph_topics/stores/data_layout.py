"""Where the embedded profile keeps its shared stores inside the memory's data directory.

One place for these names, because the stores, ``check``, ``repair``, ``forget`` and the
migrations all open or erase the same files.
"""

from __future__ import annotations

from pathlib import Path

CHECKPOINT_DATABASE = "checkpoints.sqlite"
INDEX_DIRECTORY = "index"


def checkpoint_database(data_dir: Path | str) -> Path:
    """LangGraph's SQLite checkpoint database of ``data_dir`` (every thread's checkpoints)."""
    return Path(data_dir) / CHECKPOINT_DATABASE


def index_directory(data_dir: Path | str) -> Path:
    """The local Chroma directory of ``data_dir`` (every thread's topic index collection)."""
    return Path(data_dir) / INDEX_DIRECTORY
