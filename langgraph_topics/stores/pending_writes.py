"""Whether a thread's newest checkpoint holds writes of a turn that did not finish.

Asked before every turn, so it reads two index rows instead of deserialising the checkpoint
(``get_tuple``), which costs the whole state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver

if TYPE_CHECKING:
    from langgraph.checkpoint.postgres import PostgresSaver

_NEWEST = (
    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''"
    " ORDER BY checkpoint_id DESC LIMIT 1"
)
_ANY_WRITE = (
    "SELECT 1 FROM writes WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ? LIMIT 1"
)


_PENDING_POSTGRES = """
SELECT EXISTS (
    SELECT 1 FROM checkpoint_writes
    WHERE thread_id = %s AND checkpoint_ns = '' AND checkpoint_id = (
        SELECT checkpoint_id FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = ''
        ORDER BY checkpoint_id DESC LIMIT 1
    )
) AS pending
"""


def has_pending_writes(saver: BaseCheckpointSaver[Any], thread_id: str) -> bool:
    """What ``saver.get_tuple`` of the thread's newest checkpoint says of ``pending_writes``.

    For the SQLite saver, and the PostgreSQL one (``checkpoint_writes``) of the ``postgres``
    profile.
    """
    if not isinstance(saver, SqliteSaver):
        return _has_pending_writes_postgres(cast("PostgresSaver", saver), thread_id)
    with saver.cursor(transaction=False) as cursor:
        newest = cursor.execute(_NEWEST, (thread_id,)).fetchone()
        if newest is None:
            return False
        return cursor.execute(_ANY_WRITE, (thread_id, newest[0])).fetchone() is not None


def _has_pending_writes_postgres(saver: PostgresSaver, thread_id: str) -> bool:
    from langgraph_topics.stores.postgres_profile import saver_connection

    with saver_connection(saver) as connection:
        row = connection.execute(_PENDING_POSTGRES, (thread_id, thread_id)).fetchone()
    return bool(row and row["pending"])
