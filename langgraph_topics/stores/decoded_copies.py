"""What a file's first bytes decode to, saved beside it so that the next process loads it fast.

A few files are decoded whole by the first turn of every process: the topics a topic window
reads (``decoded_topics``) and the message index's entries (``retrieval/index_entries``). At
100,000 messages their JSON takes a third of a cold start to parse (the parser making every
dictionary and string is most of it); the same columns saved with ``marshal`` load in a sixth
to a twentieth of that. A copy (``<file>.decoded``) holds the columns of the records of the
file's first ``covered`` bytes; the reader decodes only the lines past them.

A copy is a cache, like the catalog (``topic_catalog``): the file stays the only source of
truth. It is used only while the file's first ``covered`` bytes have the CRC-32 it was saved
with (the file is read whole anyway, so all of them are checked, not a sample) and its payload
has its own CRC, so ``marshal`` is only ever given bytes this module wrote. Anything else
(cut short, another file's, another version's) is said once and removed; failing to read or
save one costs the next process a longer read, never an error.
"""

from __future__ import annotations

import logging
import marshal
import struct
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph_topics.stores.durable import replace_durably

logger = logging.getLogger(__name__)

DECODED_SUFFIX = ".decoded"
_HEADER = struct.Struct("<QII")
"""Covered bytes of the file, CRC-32 of them, CRC-32 of the payload."""
REFRESH_SHARE = 4
"""A copy is saved again once the part of its file past it is over a ``REFRESH_SHARE``-th of
what it covers (decoding the rest stays cheap)…"""
REFRESH_BYTES = 256 * 1024
"""…and over this many bytes (small files are cheap to decode whole)."""

Columns = tuple[list[Any], ...]


@dataclass(frozen=True)
class Loaded:
    """A copy as loaded."""

    covered: int
    """How many bytes of the file it covers."""
    crc: int
    """CRC-32 of those bytes (extend it with the rest's to have the file's)."""
    columns: Columns


_WRITING = threading.Lock()
"""Two stores of one process (two branches) may save one copy at once; ``replace_durably``
names its scratch file after the process only."""
_unusable_paths: set[Path] = set()
"""Copies that could not be read or saved for want of access: said once per process."""


def outgrown(size: int, covered: int) -> bool:
    """Whether a copy covering ``covered`` bytes of a file of ``size`` bytes is saved again."""
    return size - covered > max(REFRESH_BYTES, covered // REFRESH_SHARE)


@dataclass(frozen=True)
class DecodedCopy:
    """The saved columns of one file's first bytes."""

    path: Path
    """Where the copy lives (the file's path with :data:`DECODED_SUFFIX`)."""
    magic: bytes
    """Names the format and its version: a new version when what a record becomes changes."""
    width: int
    """How many columns the copy holds (lists of one length)."""

    @classmethod
    def beside(cls, file: Path, magic: bytes, width: int) -> DecodedCopy:
        """The copy of ``file``, saved beside it."""
        return cls(file.with_suffix(DECODED_SUFFIX), magic, width)

    def covered(self) -> int:
        """How many bytes of its file the copy covers, from its header alone (0 if none)."""
        try:
            with self.path.open("rb") as handle:
                head = handle.read(len(self.magic) + _HEADER.size)
        except FileNotFoundError:
            return 0
        except OSError as error:
            self._warn_once("%s: unreadable (%s); its file is decoded instead", error)
            return 0
        return _HEADER.unpack_from(head, len(self.magic))[0] if self._is_header(head) else 0

    def load(self, raw: bytes) -> Loaded | None:
        """What the copy holds, if it matches the start of ``raw`` (the file's content).

        A copy that does not match is said once and removed.
        """
        try:
            saved = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as error:
            self._warn_once("%s: unreadable (%s); its file is decoded instead", error)
            return None
        parsed = self._parsed(saved, raw)
        if isinstance(parsed, str):
            logger.warning("%s: %s; it is removed", self.path, parsed)
            self.remove()
            return None
        return parsed

    def save(self, columns: Columns, covered: int, crc: int) -> None:
        """Save ``columns`` as what the first ``covered`` bytes (of CRC-32 ``crc``) decode to."""
        try:
            payload = marshal.dumps(tuple(columns))
        except ValueError as error:  # a value marshal cannot hold: the file is decoded instead
            logger.warning("%s: not saved (%s)", self.path, error)
            return
        header = _HEADER.pack(covered, crc, zlib.crc32(payload))
        try:
            with _WRITING:
                # Derived data: other processes need not reopen their stores for it.
                replace_durably(self.path, self.magic + header + payload, cached=False)
        except OSError as error:
            self._warn_once("%s: not saved (%s); its file is decoded instead", error)

    def _is_header(self, head: bytes) -> bool:
        return head.startswith(self.magic) and len(head) >= len(self.magic) + _HEADER.size

    def remove(self) -> None:
        """Remove the copy (its file was replaced), if there is one."""
        try:
            self.path.unlink(missing_ok=True)
        except OSError as error:
            self._warn_once("%s: not removed (%s); its file is decoded instead", error)

    def _parsed(self, saved: bytes, raw: bytes) -> Loaded | str:
        """The copy ``saved`` of the file ``raw``, or why it is no use."""
        if not self._is_header(saved):
            return "not a decoded copy of this version"
        covered, file_crc, payload_crc = _HEADER.unpack_from(saved, len(self.magic))
        payload = memoryview(saved)[len(self.magic) + _HEADER.size :]
        if covered > len(raw) or zlib.crc32(memoryview(raw)[:covered]) != file_crc:
            return "its file no longer starts with what it holds"
        if zlib.crc32(payload) != payload_crc:
            return "damaged"
        try:
            columns = marshal.loads(payload)
        except (ValueError, EOFError, TypeError) as error:  # a CRC match makes these unlikely
            return f"unreadable: {error}"
        if (
            not isinstance(columns, tuple)
            or len(columns) != self.width
            or not all(isinstance(column, list) for column in columns)
            or len({len(column) for column in columns}) > 1
        ):
            return f"not {self.width} columns of one length"
        return Loaded(covered, file_crc, columns)

    def _warn_once(self, message: str, error: OSError) -> None:
        if self.path not in _unusable_paths:
            _unusable_paths.add(self.path)
            logger.warning(message, self.path, error)
