"""Checkpoint retention: a thread keeps its newest checkpoints.

Disk then grows with the messages (the topic files), not with turns times the working set.
"""

from __future__ import annotations

from langgraph.checkpoint.sqlite import SqliteSaver

_KEPT = (
    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''"
    " ORDER BY checkpoint_id DESC LIMIT ?"
)


def prune_checkpoints(saver: SqliteSaver, thread_id: str, keep: int) -> int:
    """Delete all but the newest ``keep`` checkpoints of a thread (and their pending writes).

    Checkpoint ids grow with time (uuid6), so the newest are the last ``keep`` turns of every
    branch taken together; an older fork point goes, and with it time travel to before it.
    The topic files are untouched: each kept checkpoint names the records its branch sees.

    Returns:
        How many checkpoints were deleted.
    """
    if keep <= 0:
        return 0
    with saver.lock, saver.conn:
        cursor = saver.conn.execute(
            f"DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''"
            f" AND checkpoint_id NOT IN ({_KEPT})",
            (thread_id, thread_id, keep),
        )
        deleted = cursor.rowcount
        if deleted:
            saver.conn.execute(
                f"DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = ''"
                f" AND checkpoint_id NOT IN ({_KEPT})",
                (thread_id, thread_id, keep),
            )
    return max(0, deleted)
