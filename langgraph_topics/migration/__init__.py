"""Moving threads between store profiles: an embedded data directory to PostgreSQL.

``migrate_data_dir`` copies every thread (checkpoints with their ids, topics with their
sequence numbers, the topic index, the retrieval cache) and verifies each one on the target;
``langgraph-topics migrate`` runs it from the command line.
"""

from langgraph_topics.migration.checkpoints import (
    CheckpointPlan,
    copy_checkpoints,
    plan_checkpoints,
    thread_checkpoints,
)
from langgraph_topics.migration.conflicts import ThreadConflict
from langgraph_topics.migration.report import MigrationReport, ThreadMigration
from langgraph_topics.migration.run import (
    MigrationTarget,
    Progress,
    migrate_data_dir,
    migrate_thread,
    open_memories,
)
from langgraph_topics.migration.threads import list_threads
from langgraph_topics.migration.verify import ThreadVerification, verify_thread

__all__ = [
    "CheckpointPlan",
    "MigrationReport",
    "MigrationTarget",
    "Progress",
    "ThreadConflict",
    "ThreadMigration",
    "ThreadVerification",
    "copy_checkpoints",
    "list_threads",
    "migrate_data_dir",
    "migrate_thread",
    "open_memories",
    "plan_checkpoints",
    "thread_checkpoints",
    "verify_thread",
]
