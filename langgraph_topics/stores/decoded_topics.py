"""A topic file's messages as decoded, saved beside it so that the next process reads them fast.

A topic window reads its whole topic, so the first turn of a process decodes every message of
every active topic: at 100,000 messages, 28 MB of JSON took 0.3–0.45 s, a third of a cold start
(``orjson`` itself is most of it: it makes every dictionary and string). The same records
saved with ``marshal`` load in a sixth of that. ``topics/<topic_id>.decoded`` holds the message
records of the file's first ``covered`` bytes, every branch's, in file order, as two columns
(each record's ``seq`` and its message); the store applies its branch and its duplicate rule to
them as to lines just read.

It is a cache, like the catalog (``topic_catalog``): the JSONL file stays the only source of
truth. It is used only while the file's first ``covered`` bytes have the CRC it was written
with (the file is read whole anyway, so all of them are checked, not a sample) and its own
payload has its CRC, so ``marshal`` is only ever given bytes this module wrote. Anything else
(missing, cut short, another file's, another version's) is ignored and rewritten; failing to
write it costs the next process a longer read, never an error.
"""

from __future__ import annotations

import logging
import marshal
import struct
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.durable import replace_durably
from langgraph_topics.stores.jsonl_lines import decode_whole
from langgraph_topics.stores.topic_records import take_message

logger = logging.getLogger(__name__)

DECODED_SUFFIX = ".decoded"
_MAGIC = b"langgraph-topics decoded topic v1\n"
"""Names the format and its version: bump the version when what a record becomes changes."""
_HEADER = struct.Struct("<QII")
"""Covered bytes of the topic file, CRC-32 of them, CRC-32 of the payload."""
REFRESH_SHARE = 4
"""The file is decoded and saved again once the part past the saved one is over a
``REFRESH_SHARE``-th of what the saved one covers (re-reading the rest stays cheap)."""
REFRESH_BYTES = 256 * 1024
"""…and over this many bytes (small topics are cheap to read whole)."""


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


_WRITING = threading.Lock()
"""Two stores of one process (two branches) may save one topic at once; ``replace_durably``
names its scratch file after the process only."""
_UNREADABLE = "%s: unreadable (%s); the topic file is read instead"
_unusable_paths: set[Path] = set()
"""Copies that could not be read or written for want of access: said once per process."""


def decoded_path(topic_file: Path) -> Path:
    """Where the decoded messages of a topic file live."""
    return topic_file.with_suffix(DECODED_SUFFIX)


def message_records(topic_file: Path, raw: bytes) -> MessageRecords | None:
    """The message records of a topic file whose content is ``raw``, in file order.

    Read from the saved decoded copy where it still matches, the rest decoded; saved again
    when the rest has grown large. ``None`` when ``raw`` is not well-formed JSONL (a torn or
    damaged line): the caller reads it line by line, as before.
    """
    saved = _read(topic_file, raw)
    covered, records = saved if saved is not None else (0, MessageRecords())
    rest = _decoded(raw[covered:])
    if rest is None:
        return None
    records.extend(rest)
    if _stale(len(raw), covered):
        _write(topic_file, raw, records)
    return records


def refresh_decoded(topic_file: Path) -> None:
    """Save the decoded copy of a topic file again if the file has outgrown it.

    Called after appends (with the catalog), so that the next process finds a copy covering
    nearly all of the file and its first read writes nothing; only the copy's header is read
    when it is recent enough.
    """
    try:
        size = topic_file.stat().st_size
        with decoded_path(topic_file).open("rb") as handle:
            head = handle.read(len(_MAGIC) + _HEADER.size)
    except FileNotFoundError:
        head = b""
    except OSError as error:
        _warn_once(decoded_path(topic_file), _UNREADABLE, error)
        return
    covered = _HEADER.unpack_from(head, len(_MAGIC))[0] if _is_header(head) else 0
    if not _stale(size, covered):
        return
    try:
        raw = topic_file.read_bytes()
    except OSError:
        return  # the append that led here succeeded; the next reader decodes the file
    message_records(topic_file, raw)


def _stale(size: int, covered: int) -> bool:
    """Whether a copy covering ``covered`` bytes of a file of ``size`` is saved again."""
    return size - covered > max(REFRESH_BYTES, covered // REFRESH_SHARE)


def _is_header(head: bytes) -> bool:
    return head.startswith(_MAGIC) and len(head) >= len(_MAGIC) + _HEADER.size


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


def _read(topic_file: Path, raw: bytes) -> tuple[int, MessageRecords] | None:
    path = decoded_path(topic_file)
    try:
        saved = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        _warn_once(path, _UNREADABLE, error)
        return None
    start = len(_MAGIC) + _HEADER.size
    if not _is_header(saved):
        logger.warning("%s: not a decoded topic of this version; it is rewritten", path)
        return None
    covered, file_crc, payload_crc = _HEADER.unpack_from(saved, len(_MAGIC))
    payload = memoryview(saved)[start:]
    if covered > len(raw) or zlib.crc32(memoryview(raw)[:covered]) != file_crc:
        logger.warning("%s: the topic file no longer starts with what it holds; rewritten", path)
        return None
    if zlib.crc32(payload) != payload_crc:
        logger.warning("%s: damaged; it is rewritten", path)
        return None
    try:
        seqs, messages = marshal.loads(payload)
        if not isinstance(seqs, list) or not isinstance(messages, list):
            raise TypeError("not two lists")
        if len(seqs) != len(messages):
            raise ValueError("columns of different lengths")
        return covered, MessageRecords(seqs, messages)
    except (ValueError, EOFError, TypeError) as error:  # a CRC match makes these unlikely
        logger.warning("%s: unreadable (%s); it is rewritten", path, error)
        return None


def _write(topic_file: Path, raw: bytes, records: MessageRecords) -> None:
    """Save ``records`` as the decoded copy of all of ``raw`` (logged once on failure)."""
    path = decoded_path(topic_file)
    try:
        payload = marshal.dumps((records.seqs, records.messages))
    except ValueError as error:  # a value marshal cannot hold: the topic is read as JSON
        logger.warning("%s: not saved (%s)", path, error)
        return
    header = _HEADER.pack(len(raw), zlib.crc32(raw), zlib.crc32(payload))
    try:
        with _WRITING:
            # Derived data: other processes need not reopen their stores for it.
            replace_durably(path, _MAGIC + header + payload, cached=False)
    except OSError as error:
        _warn_once(path, "%s: not saved (%s); the topic file is read instead", error)


def _warn_once(path: Path, message: str, error: OSError) -> None:
    if path not in _unusable_paths:
        _unusable_paths.add(path)
        logger.warning(message, path, error)
