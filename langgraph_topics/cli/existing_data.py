"""Commands that only read or amend a thread refuse a data directory that does not exist."""

from __future__ import annotations

import os
from pathlib import Path

from langgraph_topics.errors import InputError
from langgraph_topics.settings import STORE_ENV


def require_data_dir(data_dir: Path) -> None:
    """Refuse a missing ``--data-dir`` unless the threads live in PostgreSQL.

    Opening a memory creates its data directory; for ``check``, ``review`` or ``pin`` a mistyped
    path would then leave an empty directory behind and report on nothing.

    Raises:
        InputError: ``data_dir`` is not a directory (one line naming it).
    """
    in_database = os.environ.get(STORE_ENV, "").strip().lower() == "postgres"
    if not in_database and not data_dir.is_dir():
        raise InputError(f"{data_dir}: no such data directory")
