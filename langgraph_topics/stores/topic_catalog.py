"""A topic file's catalog: what opening the store derives from the file, saved beside it.

Opening a topic store derives from each topic file its metadata, which message ids it holds, the
days it has messages on and the highest sequence number. Parsing every line of every file for
that costs seconds at 100,000 messages; ``topics/<topic_id>.catalog`` keeps what that parse read
up to a byte offset, so that opening parses only the lines appended since.

The catalog is a cache: the JSONL file stays the only source of truth, and losing, corrupting or
deleting a catalog costs one full parse, nothing else. It is used only while the file still
starts with the bytes it was read from (at least as many bytes, and the same first and last
4 KB of the part it covers); anything else (unreadable, cut short, written for another file or by
another version) is ignored with one log line, and the store rebuilds it.

It holds the records before any branch's visibility applies, so one catalog serves every branch:
message records reduced to what the index needs (:class:`MessageLine`, kept in columns), in file
order, duplicates included; every other record (headers, briefs, anything malformed) verbatim;
and the numbers of unreadable lines. The store replays them through the same code as lines read
from the file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeGuard, cast

from langgraph_topics.stores.durable import replace_durably

logger = logging.getLogger(__name__)

CATALOG_SUFFIX = ".catalog"
FORMAT = "langgraph-topics topic catalog"
VERSION = 1
"""Raise it whenever what a record becomes in the catalog changes: old catalogs are then rebuilt."""
GUARD_BYTES = 4096
"""How much of the start and of the end of the covered part the guard hashes.

Not the whole part: that would read every topic file in full on every open (50 MB at 100,000
messages, 50-100 ms here), the very cost the catalog saves. The store only appends, and cuts off
torn tails past the catalog's end, so a file that lost or changed lines it covers has been
rewritten by hand or replaced, which all but always changes its size or these bytes.
"""

# Two stores of one process (two branches of a thread) may rewrite the same catalog at once, and
# ``replace_durably`` names its scratch file after the process only.
_WRITING = threading.Lock()


class MessageLine(NamedTuple):
    """A well-formed message record, reduced to what opening the store needs."""

    id: str
    seq: int | None
    """Its sequence number; ``None`` when the record has no usable one."""
    stored_at: str
    day: str | None
    """The calendar day it counts on (its timestamp's, else the day it was stored), if any."""


@dataclass
class MessageBlock:
    """Consecutive :class:`MessageLine` records, column by column (indexed a block at a time)."""

    ids: list[str] = field(default_factory=list)
    seqs: list[int | None] = field(default_factory=list)
    stored_at: list[str] = field(default_factory=list)
    days: list[str | None] = field(default_factory=list)

    def add(self, line: MessageLine) -> None:
        """Append one record."""
        self.ids.append(line.id)
        self.seqs.append(line.seq)
        self.stored_at.append(line.stored_at)
        self.days.append(line.day)

    def lines(self) -> Iterator[MessageLine]:
        """The records one by one."""
        return map(MessageLine, self.ids, self.seqs, self.stored_at, self.days)


class UnreadableLine(NamedTuple):
    """A line that is not a JSON object (its number in the file, for the warning)."""

    number: int


Entry = dict[str, Any] | MessageBlock | UnreadableLine
"""Lines of a topic file as the store indexes them; records other than messages stay whole."""


@dataclass(frozen=True)
class Catalog:
    """The entries of a topic file's first ``covered_bytes`` bytes (``covered_lines`` lines)."""

    entries: list[Entry]
    covered_bytes: int
    covered_lines: int


class _Invalid(ValueError):
    """Why a catalog cannot be used."""


def catalog_path(topic_file: Path) -> Path:
    """Where the catalog of a topic file lives."""
    return topic_file.with_suffix(CATALOG_SUFFIX)


def read_catalog(topic_file: Path) -> Catalog | None:
    """The catalog of a topic file when it still describes the file's start, else None.

    A missing catalog is None silently; any other unusable one is logged (one line).
    """
    path = catalog_path(topic_file)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        logger.warning("%s: unreadable (%s); reading the topic file instead", path, error)
        return None
    try:
        document = json.loads(raw)
        if not isinstance(document, dict):
            raise _Invalid("not a JSON object")
        catalog = _decode(document, topic_file.name)
        if document["guard"] != _guard(topic_file, catalog.covered_bytes):
            raise _Invalid("the topic file no longer starts with what it describes")
    except (ValueError, OSError) as error:  # _Invalid and UnicodeDecodeError are ValueErrors
        logger.warning("%s: ignored (%s); reading the topic file instead", path, error)
        return None
    return catalog


def write_catalog(topic_file: Path, catalog: Catalog) -> None:
    """Replace the catalog of a topic file (atomically: a crash leaves the old one or this one).

    Raises:
        OSError: The guard bytes could not be read or the catalog not written.
        ValueError: The topic file is shorter than ``catalog.covered_bytes``.
    """
    document = _encode(catalog, topic_file.name, _guard(topic_file, catalog.covered_bytes))
    try:
        data = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate somewhere: escaped, it reads back the same
        data = json.dumps(document, separators=(",", ":")).encode("ascii")
    with _WRITING:
        replace_durably(catalog_path(topic_file), data)


def _guard(topic_file: Path, covered: int) -> str:
    """A hash of the first and the last ``GUARD_BYTES`` of the file's first ``covered`` bytes."""
    with topic_file.open("rb") as handle:
        head = handle.read(min(covered, GUARD_BYTES))
        handle.seek(max(0, covered - GUARD_BYTES))
        tail = handle.read(min(covered, GUARD_BYTES))
    if len(tail) < min(covered, GUARD_BYTES):
        raise _Invalid(f"the topic file is shorter than the {covered} bytes it covers")
    digest = hashlib.blake2b(digest_size=16)
    digest.update(covered.to_bytes(8, "little"))
    digest.update(head)
    digest.update(tail)
    return digest.hexdigest()


# ------------------------------------------------------------------------------- encoding


def _encode(catalog: Catalog, file_name: str, guard: str) -> dict[str, Any]:
    columns = MessageBlock()
    others: list[list[Any]] = []
    """``[messages before it, record or unreadable line number]``, in file order."""
    for entry in catalog.entries:
        if isinstance(entry, MessageBlock):
            columns.ids += entry.ids
            columns.seqs += entry.seqs
            columns.stored_at += entry.stored_at
            columns.days += entry.days
        else:
            others.append([len(columns.ids), entry if isinstance(entry, dict) else entry.number])
    return {
        "format": FORMAT,
        "version": VERSION,
        "topic_file": file_name,
        "covered_bytes": catalog.covered_bytes,
        "covered_lines": catalog.covered_lines,
        "guard": guard,
        "ids": columns.ids,
        # Runs: one append numbers its messages consecutively and gives them one stored_at;
        # consecutive messages mostly share a day.
        "seqs": _counting_runs(columns.seqs),
        "stored_at": _runs(columns.stored_at),
        "days": _runs(columns.days),
        "others": others,
    }


def _decode(document: dict[str, Any], file_name: str) -> Catalog:
    if document.get("format") != FORMAT or document.get("version") != VERSION:
        raise _Invalid(f"not a version {VERSION} catalog")
    if document.get("topic_file") != file_name:
        raise _Invalid(f"written for {document.get('topic_file')!r}")
    covered_bytes, covered_lines = document.get("covered_bytes"), document.get("covered_lines")
    if not _is_count(covered_bytes) or not _is_count(covered_lines):
        raise _Invalid("no covered size")
    if not isinstance(document.get("guard"), str):
        raise _Invalid("no guard")
    ids = document.get("ids")
    if not isinstance(ids, list) or not set(map(type, ids)) <= {str}:
        raise _Invalid("bad ids")
    seqs = _expand_counting(document.get("seqs"), len(ids))
    stored_at = _expand(document.get("stored_at"), len(ids), {str})
    days = _expand(document.get("days"), len(ids), {str, type(None)})
    others = document.get("others")
    if not isinstance(others, list):
        raise _Invalid("bad records")
    entries: list[Entry] = []
    done = 0
    for pair in others:
        if not isinstance(pair, list) or len(pair) != 2 or not _is_count(pair[0]):
            raise _Invalid("bad records")
        place, item = pair
        if not done <= place <= len(ids) or type(item) not in (dict, int):
            raise _Invalid("bad records")
        if place > done:
            entries.append(
                MessageBlock(
                    ids[done:place], seqs[done:place], stored_at[done:place], days[done:place]
                )
            )
            done = place
        entries.append(item if isinstance(item, dict) else UnreadableLine(item))
    if done < len(ids):
        entries.append(MessageBlock(ids[done:], seqs[done:], stored_at[done:], days[done:]))
    return Catalog(entries, covered_bytes, covered_lines)


def _runs(values: Iterable[Any]) -> list[list[Any]]:
    runs: list[list[Any]] = []
    for value in values:
        if runs and runs[-1][0] == value:
            runs[-1][1] += 1
        else:
            runs.append([value, 1])
    return runs


def _expand(runs: object, length: int, kinds: set[type]) -> list[Any]:
    """The values of ``[value, count]`` runs: ``length`` of them, each of one of ``kinds``."""
    values: list[Any] = []
    try:
        for value, count in cast(list[list[Any]], runs):
            values += [value] * count
    except (TypeError, ValueError):
        raise _Invalid("bad runs") from None
    if len(values) != length or not set(map(type, values)) <= kinds:
        raise _Invalid("bad runs")
    return values


def _counting_runs(values: Iterable[int | None]) -> list[list[Any]]:
    """``[first, count]`` for consecutive numbers ``first, first + 1, ...``; None for no numbers."""
    runs: list[list[Any]] = []
    for value in values:
        last = runs[-1] if runs else None
        if last is not None and value is None and last[0] is None:
            last[1] += 1
        elif (
            last is not None
            and value is not None
            and last[0] is not None
            and last[0] + last[1] == value
        ):
            last[1] += 1
        else:
            runs.append([value, 1])
    return runs


def _expand_counting(runs: object, length: int) -> list[int | None]:
    """The numbers of :func:`_counting_runs`: ``length`` of them."""
    values: list[int | None] = []
    try:
        for first, count in cast(list[list[Any]], runs):
            values += [None] * count if first is None else range(first, first + count)
    except (TypeError, ValueError):
        raise _Invalid("bad sequence numbers") from None
    if len(values) != length or not set(map(type, values)) <= {int, type(None)}:
        raise _Invalid("bad sequence numbers")
    return values


def _is_count(value: object) -> TypeGuard[int]:
    return type(value) is int and value >= 0
