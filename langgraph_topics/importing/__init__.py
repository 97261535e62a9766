"""Checking a recorded conversation before it is imported: files, records, times, ids.

Everything here runs before anything is written, so a bad input changes nothing.
"""

from langgraph_topics.importing.idempotency import messages_to_add
from langgraph_topics.importing.jsonl import read_jsonl
from langgraph_topics.importing.records import (
    CheckedMessage,
    Origin,
    SourcedRecord,
    check_records,
)
from langgraph_topics.importing.timestamps import normalize_timestamp

__all__ = [
    "CheckedMessage",
    "Origin",
    "SourcedRecord",
    "check_records",
    "messages_to_add",
    "normalize_timestamp",
    "read_jsonl",
]
