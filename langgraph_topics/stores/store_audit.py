"""A record-by-record audit of a thread's topics in a shared store, for ``check``.

The counterpart of ``topic_audit.audit_topic_files`` for ``BaseStoreTopicStore``: the store
keeps the first copy of an id and answers from it, so an id stored twice would go unseen by
the partition check; the audit names every record of each id by topic and sequence number.
"""

from __future__ import annotations

from collections.abc import Iterable

from langgraph_topics.stores.base_store_topics import StoredRecord
from langgraph_topics.stores.seq_ranges import SeqRanges, contains
from langgraph_topics.stores.topic_audit import Place, TopicFilesAudit


def audit_store_records(
    records: Iterable[StoredRecord], ranges: SeqRanges | None
) -> TopicFilesAudit:
    """Sort a thread's message records by branch, each placed as ``store <topic> seq:<n>``.

    Args:
        records: Every record of the thread (``BaseStoreTopicStore.stored_records``).
        ranges: The branch's record ranges (``store_ranges``); ``None``: every record counts.
    """

    def on_branch(seq: int) -> bool:
        return ranges is None or seq < 0 or contains(ranges, seq)

    ordered = sorted(records, key=lambda stored: stored.seq)
    topics_on_branch: dict[str, bool] = {
        stored.topic: on_branch(stored.seq)
        for stored in reversed(ordered)  # the first header of a topic decides
        if stored.record.get("type") == "topic" and stored.topic is not None
    }
    audit = TopicFilesAudit()
    for stored in ordered:
        message_id = stored.record.get("id")
        if stored.record.get("type") != "message" or not isinstance(message_id, str):
            continue
        header_on_branch = topics_on_branch.get(stored.topic or "", True)
        target = audit.branch if on_branch(stored.seq) and header_on_branch else audit.elsewhere
        target.setdefault(message_id, []).append(Place(f"store {stored.topic} seq", stored.seq))
    return audit
