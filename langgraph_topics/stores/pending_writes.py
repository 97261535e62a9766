"""Whether a thread's newest checkpoint holds writes of a turn that did not finish.

Asked before every turn, so it reads two index rows instead of deserialising the checkpoint
(``get_tuple``), which costs the whole state.
"""

from __future__ import annotations

from langgraph.checkpoint.sqlite import SqliteSaver

_NEWEST = (
    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''"
    " ORDER BY checkpoint_id DESC LIMIT 1"
)
_ANY_WRITE = (
    "SELECT 1 FROM writes WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ? LIMIT 1"
)


def has_pending_writes(saver: SqliteSaver, thread_id: str) -> bool:
    """What ``saver.get_tuple`` of the thread's newest checkpoint says of ``pending_writes``."""
    with saver.cursor(transaction=False) as cursor:
        newest = cursor.execute(_NEWEST, (thread_id,)).fetchone()
        if newest is None:
            return False
        return cursor.execute(_ANY_WRITE, (thread_id, newest[0])).fetchone() is not None
