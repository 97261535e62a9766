"""The error of a thread that the target already holds with other data."""

from __future__ import annotations

from langgraph_topics.errors import InputError


class ThreadConflict(InputError):
    """The target holds the thread with data the source does not have; nothing is overwritten.

    Args:
        thread_id: The thread.
        detail: What differs (one line).
    """

    def __init__(self, thread_id: str, detail: str) -> None:
        super().__init__(
            f"thread {thread_id!r} is already in the target with different data ({detail}); "
            "nothing was overwritten"
        )
        self.thread_id = thread_id
