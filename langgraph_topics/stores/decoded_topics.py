"""A topic file's messages as decoded, saved beside it so that the next process reads them fast.

A topic window reads its whole topic, so the first turn of a process decodes every message of
every active topic: at 100,000 messages, 28 MB of JSON took 0.3–0.45 s, a third of a cold start.
``topics/<topic_id>.decoded`` (a ``decoded_copies`` copy) holds the message records of the
file's first bytes, every branch's, in file order, as two columns (each record's ``seq`` and its
message); the store applies its branch and its duplicate rule to them as to lines just read.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path

from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.decoded_copies import DecodedCopy, outgrown
from langgraph_topics.stores.jsonl_lines import decode_whole
from langgraph_topics.stores.topic_records import take_message

_MAGIC = b"langgraph-topics decoded topic v1\n"


@dataclass
class MessageRecords:
    """A topic file's message records in file order, as two columns."""

    seqs: list[object] = field(default_factory=list)
    """Each record's ``seq`` value as written (the store's branches are ranges of them)."""
    messages: list[StoredMessage] = field(default_factory=list)
    """Each record's message, without the store's own keys."""

    def add(self, seq: object, message: StoredMessage) -> None:
        """Append one record."""
        self.seqs.append(seq)
        self.messages.append(message)

    def extend(self, more: MessageRecords) -> None:
        """Append the records of ``more``."""
        self.seqs += more.seqs
        self.messages += more.messages


def decoded_copy(topic_file: Path) -> DecodedCopy:
    """The decoded messages of a topic file, saved beside it."""
    return DecodedCopy.beside(topic_file, _MAGIC, width=2)


def message_records(topic_file: Path, raw: bytes) -> MessageRecords | None:
    """The message records of a topic file whose content is ``raw``, in file order.

    Read from the saved decoded copy where it still matches, the rest decoded; saved again
    when the rest has grown large. ``None`` when ``raw`` is not well-formed JSONL (a torn or
    damaged line): the caller reads it line by line, as before.
    """
    copy = decoded_copy(topic_file)
    covered, crc, records = 0, 0, MessageRecords()
    loaded = copy.load(raw)
    if loaded is not None:
        covered, crc = loaded.covered, loaded.crc
        records = MessageRecords(*loaded.columns)
    rest = _decoded(raw[covered:])
    if rest is None:
        return None
    records.extend(rest)
    if outgrown(len(raw), covered):
        crc = zlib.crc32(memoryview(raw)[covered:], crc)
        copy.save((records.seqs, records.messages), len(raw), crc)
    return records


def refresh_decoded(topic_file: Path) -> None:
    """Save the decoded copy of a topic file again if the file has outgrown it.

    Called after appends (with the catalog), so that the next process finds a copy covering
    nearly all of the file and its first read saves nothing; only the copy's header is read
    when it is recent enough.
    """
    try:
        size = topic_file.stat().st_size
    except OSError:
        return
    if not outgrown(size, decoded_copy(topic_file).covered()):
        return
    try:
        raw = topic_file.read_bytes()
    except OSError:
        return  # the append that led here succeeded; the next reader decodes the file
    message_records(topic_file, raw)


def _decoded(raw: bytes) -> MessageRecords | None:
    records = MessageRecords()
    whole = decode_whole(raw) if raw else []
    if whole is None:
        return None
    for record in whole:
        if record.get("type") != "message":
            continue
        seq = record.get("seq")
        message = take_message(record)
        if message is not None:
            records.add(seq, message)
    return records
