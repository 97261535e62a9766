"""Checkpoint retention: a thread keeps its newest checkpoints.

Disk then grows with the messages (the topic files), not with turns times the working set.
A turn does not prune: every ``keep // 10 + 1``-th turn of a thread in a process does
(``Retention``), so a thread holds between ``keep`` and ``keep + keep // 10`` checkpoints.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, cast

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver

if TYPE_CHECKING:
    from langgraph.checkpoint.postgres import PostgresSaver

_KEPT = (
    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''"
    " ORDER BY checkpoint_id DESC LIMIT ?"
)


_PRUNE_POSTGRES = """
DELETE FROM checkpoints
WHERE thread_id = %s AND checkpoint_ns = '' AND checkpoint_id NOT IN (
    SELECT checkpoint_id FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = ''
    ORDER BY checkpoint_id DESC LIMIT %s
)
RETURNING checkpoint_id, checkpoint -> 'channel_versions' AS versions
"""
_PRUNE_WRITES_POSTGRES = """
DELETE FROM checkpoint_writes
WHERE thread_id = %s AND checkpoint_ns = '' AND checkpoint_id = ANY(%s)
"""
# A channel value is stored once per version and shared by every checkpoint at that version:
# only the versions no kept checkpoint names go.
_PRUNE_BLOBS_POSTGRES = """
DELETE FROM checkpoint_blobs AS b
USING unnest(%s::text[], %s::text[]) AS freed(channel, version)
WHERE b.thread_id = %s AND b.checkpoint_ns = ''
AND b.channel = freed.channel AND b.version = freed.version
AND NOT EXISTS (
    SELECT 1 FROM checkpoints AS c
    WHERE c.thread_id = %s AND c.checkpoint_ns = ''
    AND c.checkpoint -> 'channel_versions' ->> freed.channel = freed.version
)
"""


SLACK_SHARE = 10
"""Between two prunes a thread gains up to ``keep // SLACK_SHARE`` checkpoints over ``keep``."""


class Retention:
    """Prunes each thread's checkpoints once every few turns of this process.

    Pruning after every turn costs a scan of the thread's checkpoints for one row; letting
    ``keep // SLACK_SHARE`` turns pass deletes that many at once. A thread's first turn in a
    process always prunes (what other processes left is not known here).
    """

    def __init__(self) -> None:
        self._since: dict[str, int] = {}
        """Per thread, the turns since this process last pruned it."""
        self._lock = threading.Lock()

    def after_turn(self, saver: BaseCheckpointSaver[Any], thread_id: str, keep: int) -> int:
        """Count one turn of ``thread_id``; prune when enough turns passed (see the class).

        Returns:
            How many checkpoints were deleted.
        """
        if keep <= 0:
            return 0
        with self._lock:
            since = self._since.get(thread_id)
            if since is not None and since < keep // SLACK_SHARE:
                self._since[thread_id] = since + 1
                return 0
            self._since[thread_id] = 0
        return prune_checkpoints(saver, thread_id, keep)


def prune_checkpoints(saver: BaseCheckpointSaver[Any], thread_id: str, keep: int) -> int:
    """Delete all but the newest ``keep`` checkpoints of a thread (and their pending writes).

    Checkpoint ids grow with time (uuid6), so the newest are the last ``keep`` turns of every
    branch taken together; an older fork point goes, and with it time travel to before it.
    The topic files are untouched: each kept checkpoint names the records its branch sees.

    Returns:
        How many checkpoints were deleted.
    """
    if keep <= 0:
        return 0
    if not isinstance(saver, SqliteSaver):
        return _prune_postgres(cast("PostgresSaver", saver), thread_id, keep)
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


def _prune_postgres(saver: PostgresSaver, thread_id: str, keep: int) -> int:
    """``prune_checkpoints`` on the PostgreSQL saver's tables, in one transaction."""
    from langgraph_topics.stores.postgres_profile import saver_connection

    with saver_connection(saver) as connection, connection.transaction():
        deleted = connection.execute(_PRUNE_POSTGRES, (thread_id, thread_id, keep)).fetchall()
        if not deleted:
            return 0
        ids = [row["checkpoint_id"] for row in deleted]
        connection.execute(_PRUNE_WRITES_POSTGRES, (thread_id, ids))
        freed = sorted(
            {
                (channel, str(version))
                for row in deleted
                for channel, version in (row["versions"] or {}).items()
            }
        )
        if freed:
            channels, versions = [list(column) for column in zip(*freed, strict=True)]
            connection.execute(_PRUNE_BLOBS_POSTGRES, (channels, versions, thread_id, thread_id))
    return len(deleted)
