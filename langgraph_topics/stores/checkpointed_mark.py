"""A thread directory's note that the thread has checkpoints: how a lost database is told.

Until its first split a thread's messages live in the checkpoint database only, and its
directory holds no topic file. Were the database deleted or emptied, nothing would show that
the thread ever existed, and its next turn would start it over without a word.
``<thread-dir>/.checkpointed`` says it did (``TopicMemory.require_checkpoints``).

Written once per thread, **after** its first checkpoint is saved, never before: a crash in
between leaves an unmarked thread that its next turn marks, while a mark ahead of the
checkpoint would make a thread that never got one look lost.
"""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime
from pathlib import Path

from langgraph_topics.stores.durable import replace_durably

MARK_FILE = ".checkpointed"

log = logging.getLogger(__name__)


def is_marked(directory: Path) -> bool:
    """Whether the thread of ``directory`` has had a checkpoint (looking creates nothing)."""
    return (Path(directory) / MARK_FILE).is_file()


class CheckpointedMarks:
    """Marks the threads whose checkpoints a memory saved; one look per thread and process."""

    def __init__(self) -> None:
        self._known: set[Path] = set()
        self._mutex = threading.Lock()

    def mark(self, directory: Path, thread_id: str) -> None:
        """Note that ``thread_id`` (in ``directory``) has a checkpoint now.

        A failed write is logged, not raised: the turn it follows is saved already, and
        failing it would show the user an error for a turn that happened.
        """
        directory = Path(directory)
        # Held while writing too: two threads of one process share a scratch file name.
        with self._mutex:
            if directory in self._known:
                return
            if not is_marked(directory):
                note = {"thread_id": thread_id, "since": datetime.now(UTC).isoformat()}
                try:
                    data = json.dumps(note, ensure_ascii=False).encode("utf-8")
                    replace_durably(directory / MARK_FILE, data, cached=False)
                except OSError as error:
                    log.warning("thread %s: %s not written: %s", thread_id, MARK_FILE, error)
                    return
            self._known.add(directory)
