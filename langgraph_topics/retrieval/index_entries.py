"""The message index's entries: each row's message id, topic and time, in split order.

``retrieval/entries.jsonl`` holds one JSON line per row (``{"id", "topic", "time"}``), only
ever appended to, and cut back with the index's other files after a crash. Every open of a
thread reads it whole: at 100,000 rows its lines took 0.15–0.2 s to take apart, the largest
part of opening the index. So what its lines decode to is also saved beside it
(``retrieval/entries.decoded``, a ``stores/decoded_copies`` copy, saved again as appends
outgrow it), and an open decodes only the lines appended since.
"""

from __future__ import annotations

import json
import logging
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from langgraph_topics.stores.decoded_copies import DecodedCopy, outgrown
from langgraph_topics.stores.durable import append_durably, replace_durably
from langgraph_topics.stores.jsonl_lines import decode_lines

log = logging.getLogger(__name__)

_MAGIC = b"langgraph-topics index entries v1\n"


@dataclass
class Entries:
    """Entries as three columns: each row's message id, topic and time."""

    ids: list[str] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    times: list[float | None] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    def cut(self, rows: int) -> Entries:
        """The first ``rows`` rows (new lists)."""
        return Entries(self.ids[:rows], self.topics[:rows], self.times[:rows])

    def extend(self, more: Entries) -> None:
        """Append the rows of ``more``."""
        self.ids += more.ids
        self.topics += more.topics
        self.times += more.times


_ENTRY_LINE = re.compile(
    rb'^\{"id": "([^"\\\x00-\x1f]*)", "topic": "([^"\\\x00-\x1f]*)", '
    rb'"time": (null|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\}\n',
    re.MULTILINE,
)
"""A line exactly as :func:`entry_lines` writes it (``json.dumps`` of the three keys), without
escapes in its strings (a file with any is decoded line by line): strings without a quote, a
backslash or a control character, and a time that is a JSON number or null, so that a line it
takes is one a JSON parser takes alike."""


def entry_lines(ids: Sequence[str], topics: Sequence[str], times: Sequence[float | None]) -> bytes:
    """Rows as the file holds them, one JSON line each."""
    return "".join(
        json.dumps({"id": i, "topic": t, "time": time}) + "\n"
        for i, t, time in zip(ids, topics, times, strict=True)
    ).encode("utf-8")


def read_entries(path: Path, raw: bytes, first_line: int = 1) -> tuple[Entries, bool]:
    """The entries of ``raw``, up to the first unreadable line, and whether all were read.

    ``raw`` is the lines of ``path`` from ``first_line`` on; the rows after an unreadable line
    are indexed again from the topic store. Lines as the index writes them are taken apart by
    one regular expression over the whole of ``raw`` (a third of the time of a JSON parse per
    line); any other text is decoded line by line.
    """
    complete = raw[: raw.rfind(b"\n") + 1]
    found = _ENTRY_LINE.findall(complete)
    if len(found) == complete.count(b"\n") and len(complete) == len(raw):
        try:
            topics: dict[bytes, str] = {}
            entries = Entries(
                [i.decode("utf-8") for i, _, _ in found],
                [topics.get(t) or topics.setdefault(t, t.decode("utf-8")) for _, t, _ in found],
                [None if time == b"null" else float(time) for _, _, time in found],
            )
            return entries, True
        except ValueError:  # UnicodeDecodeError included
            pass
    return decode_entries(path, raw, first_line)


def decode_entries(path: Path, raw: bytes, first_line: int = 1) -> tuple[Entries, bool]:
    """The entries of ``raw`` decoded line by line (see :func:`read_entries`)."""
    entries = Entries()
    for number, record in decode_lines(raw.split(b"\n"), first_line):
        if record is None or "id" not in record or "topic" not in record:
            log.warning("%s:%d: unreadable entry; the rest of the file is re-indexed", path, number)
            return entries, False
        time = record.get("time")
        entries.ids.append(str(record["id"]))
        entries.topics.append(str(record["topic"]))
        entries.times.append(float(time) if isinstance(time, int | float) else None)
    return entries, True


class EntriesFile:
    """``entries.jsonl`` as one index reads and appends to it, its decoded copy kept level.

    The index files rows under other topics in memory (``rekeyed.jsonl`` says so on disk), so
    the rows as the file holds them are kept here, with the file's size and CRC-32 as appended:
    a copy is saved from them without reading the file again. Were they wrong (another writer),
    the next open would find the copy not matching the file and decode the file instead.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._copy = DecodedCopy.beside(path, _MAGIC, width=3)
        self._filed = Entries()
        self._size = 0
        self._crc = 0
        self._covered = 0
        """Bytes the saved copy covers."""
        self._level = True
        """Whether ``_filed`` is what the file's lines decode to (not after a damaged line the
        index has not cut away): only then is a copy saved."""

    def read(self) -> Entries:
        """The file's rows up to the first unreadable line (new lists, the caller's to change).

        The rows the copy covers come from it, the rest are decoded; the copy is saved again
        if the file has outgrown it (and every line was read).
        """
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            raw = b""
        loaded = self._copy.load(raw)
        covered, crc, entries = 0, 0, Entries()
        if loaded is not None:
            covered, crc = loaded.covered, loaded.crc
            entries = Entries(*loaded.columns)
        rest, whole = read_entries(self.path, raw[covered:], raw.count(b"\n", 0, covered) + 1)
        entries.extend(rest)
        self._filed, self._covered = entries.cut(len(entries)), covered
        self._size, self._crc = len(raw), zlib.crc32(memoryview(raw)[covered:], crc)
        self._level = whole
        self._save_if_outgrown()
        return entries

    def append(
        self, ids: Sequence[str], topics: Sequence[str], times: Sequence[float | None]
    ) -> None:
        """Append rows durably, then save the copy again if the file has outgrown it."""
        data = entry_lines(ids, topics, times)
        append_durably(self.path, data)
        self._filed.extend(Entries(list(ids), list(topics), list(times)))
        self._size += len(data)
        self._crc = zlib.crc32(data, self._crc)
        self._save_if_outgrown()

    def rewrite(self, entries: Entries) -> None:
        """Replace the file with ``entries`` (cut back to the rows every file holds)."""
        data = entry_lines(entries.ids, entries.topics, entries.times)
        self._copy.remove()  # it would no longer match, and say so
        replace_durably(self.path, data)
        self._filed, self._covered, self._level = entries.cut(len(entries)), 0, True
        self._size, self._crc = len(data), zlib.crc32(data)
        self._save_if_outgrown()

    def forget(self) -> None:
        """The file was removed (the index is rebuilt): so is its copy."""
        self._copy.remove()
        self._filed, self._size, self._crc, self._covered = Entries(), 0, 0, 0
        self._level = True

    def _save_if_outgrown(self) -> None:
        if self._level and outgrown(self._size, self._covered):
            filed = self._filed
            self._copy.save((filed.ids, filed.topics, filed.times), self._size, self._crc)
            self._covered = self._size
