"""Append-only JSONL topic store: one file per topic, one directory per thread.

Layout under ``root``::

    topics/<topic_id>.jsonl   # {"type": "topic", ...} header, then "message" and "brief" lines
                              # (and a "merged" line once a review merged it into another,
                              # a "subtopics" line once it was split: ``subtopics``)
    topics/archived/YYYY-MM/<topic_id>.json   # an archived topic's summary (archive_shelves)
    topics/time-index.json    # topics per day, derived (time_index_file)
    links.jsonl               # {"type": "link", "from": ..., "to": ..., "kind": ...} lines

Every file is only ever appended to, so a crash can at worst tear the last line; that line is
dropped (and reported) when the store is reopened. Everything else the store answers comes from
an in-memory index rebuilt from the files on open, so the files stay the single source of truth.
What that rebuild derives from a topic file is cached beside it (``topics/<topic_id>.catalog``,
see ``topic_catalog``), so that a reopen parses only the lines appended since; so are the
messages of a long topic as first decoded (``topics/<topic_id>.decoded``, ``decoded_topics``).

Only one :class:`JsonlTopicStore` may write to a directory at a time: the index is not re-read
when another process appends.

Every record carries a sequence number. A store opened with ``visible`` ranges (see
``seq_ranges``) answers only from the records in them, plus what it writes itself: that is how
a branch of the checkpoint history sees its own topics and nothing of another branch.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import compress
from operator import itemgetter
from pathlib import Path
from typing import Any, cast

from langgraph_topics.state.records import StoredMessage, TopicMeta
from langgraph_topics.stores.archive_shelves import ARCHIVED_DIR, FileArchiveShelf
from langgraph_topics.stores.decoded_topics import (
    MessageRecords,
    message_records,
    refresh_decoded,
)
from langgraph_topics.stores.durable import append_durably, fsync_directory, truncate_durably
from langgraph_topics.stores.jsonl_lines import decode_line, decode_lines, decode_whole
from langgraph_topics.stores.merged_topics import MERGED, merged_target
from langgraph_topics.stores.seq_ranges import (
    SeqRanges,
    contains,
    covers,
    normalize,
    with_range,
)
from langgraph_topics.stores.subtopics import SUBTOPICS, made_by_split
from langgraph_topics.stores.time_index_file import (
    TIME_INDEX_FILE,
    mend_time_index,
    save_time_index,
)
from langgraph_topics.stores.topic_catalog import (
    Catalog,
    Entry,
    MessageBlock,
    MessageLine,
    UnreadableLine,
    catalog_path,
    read_catalog,
    write_catalog,
)
from langgraph_topics.stores.topic_records import (
    NEVER,
    IndexedTopic,
    TopicRecordIndex,
    apply_brief,
    day_of,
    header_meta,
    headless_meta,
    link_of,
    message_from_record,
    order_key,
    parse_time,
    take_message,
)
from langgraph_topics.stores.topic_records import TOPICS_DIR as TOPICS_DIR  # re-export
from langgraph_topics.stores.topic_records import now as _now  # the clock tests freeze

logger = logging.getLogger(__name__)

LINKS_FILE = "links.jsonl"


@dataclass
class _Topic(IndexedTopic):
    """What the index keeps per topic (messages themselves are loaded lazily)."""

    cache: list[StoredMessage] | None = None
    """Parsed messages once someone asked for them; kept in step with appends."""
    positions: dict[str, int] | None = None
    """Each cached message's index in ``cache``: a message or its neighbourhood without a scan."""
    uncatalogued: int = 0
    """Bytes appended to the file (by this store) since its catalog last covered it, about."""
    last_seq: int = -1
    """The highest sequence number among the topic's records this branch sees."""


@dataclass
class _TopicLoading:
    """What indexing a topic file's lines has found so far."""

    path: Path
    topic: _Topic | None = None
    ids: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    other_branch: bool = False
    """The header belongs to another branch: so does the whole file."""


def _numbered(record: dict[str, Any], seq: int) -> dict[str, Any]:
    """A record with its sequence number, which a line carries right after its type."""
    return {"type": record["type"], "seq": seq, **record}


def _encode(record: dict[str, Any]) -> bytes:
    r"""Encode one record as a complete JSONL line.

    Non-ASCII text is kept readable; only text that UTF-8 cannot carry (lone surrogates) falls
    back to ``\u`` escapes, which ``json.loads`` turns back into the same string.
    """
    try:
        return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(record, ensure_ascii=True) + "\n").encode("ascii")


@dataclass
class _FileLines:
    """The lines of a JSONL file from some byte offset on."""

    records: list[tuple[int, dict[str, Any] | None]]
    """Each complete, non-blank line's number and its record (None: unreadable)."""
    end: int
    """The offset just past the last complete line."""
    lines: int
    """How many complete lines the file has up to ``end``."""
    unterminated: dict[str, Any] | None = None
    """A complete record on a last line without its newline, left so (no repair)."""


def _parse_file(path: Path, *, repair: bool, start: int = 0, first_line: int = 1) -> _FileLines:
    r"""Decode the lines of a JSONL file from byte ``start`` (line ``first_line``) on.

    Lines are split on ``\n`` bytes only: ``str.splitlines`` would also split on U+2028 and
    friends, which ``json.dumps(ensure_ascii=False)`` writes unescaped inside strings.

    A last line without its newline is the trace of a torn write. With ``repair`` it is cut off
    so that later appends start on a fresh line (or, if it happens to be a complete record,
    its newline is restored); damaged lines elsewhere are kept (as None) and never removed.
    """
    try:
        with path.open("rb") as handle:
            handle.seek(start)
            raw = handle.read()
    except FileNotFoundError:
        return _FileLines([], start, first_line - 1)
    lines = raw.split(b"\n")
    tail = lines.pop()  # empty when the file ends with a newline, as it should
    parsed = _FileLines(
        decode_lines(lines, first_line),
        end=start + len(raw) - len(tail),
        lines=first_line - 1 + len(lines),
    )
    if not tail:
        return parsed
    record = decode_line(tail) if tail.strip(b"\x00 \t\r") else None
    if record is not None and not repair:
        parsed.unterminated = record
    elif record is not None:
        logger.warning("%s: last line had no newline; completing it", path)
        append_durably(path, b"\n")
        parsed.lines += 1
        parsed.records.append((parsed.lines, record))
        parsed.end += len(tail) + 1
    else:
        logger.warning(
            "%s: ignoring torn last line (%d bytes, crash during a write?)", path, len(tail)
        )
        if repair:
            truncate_durably(path, parsed.end)
    return parsed


def _read_records(path: Path, *, repair: bool) -> Iterator[dict[str, Any]]:
    """Yield the JSON object records of a JSONL file, skipping (and logging) damaged lines.

    A last line without its newline is handled as :func:`_parse_file` says.
    """
    try:
        whole = decode_whole(path.read_bytes())
    except FileNotFoundError:
        return
    if whole is not None:  # the common case, without numbering the lines
        yield from whole
        return
    parsed = _parse_file(path, repair=repair)
    for number, record in parsed.records:
        if record is None:
            logger.warning("%s: skipping unreadable line %d", path, number)
            continue
        yield record
    if parsed.unterminated is not None:
        yield parsed.unterminated


def _scan_topic_file(path: Path, *, repair: bool) -> tuple[Catalog, int]:
    """Every complete line of a topic file as the index takes it: its catalog, then the rest.

    Returns:
        The entries with the bytes and lines they cover, and how many of those bytes the
        catalog on disk already covered (0 without a usable one).
    """
    catalog = read_catalog(path)
    entries: list[Entry] = catalog.entries if catalog is not None else []
    start, lines = (catalog.covered_bytes, catalog.covered_lines) if catalog else (0, 0)
    parsed = _parse_file(path, repair=repair, start=start, first_line=lines + 1)
    for number, record in parsed.records:
        entry = UnreadableLine(number) if record is None else _entry_of(record)
        if not isinstance(entry, MessageLine):
            entries.append(entry)
            continue
        if not entries or not isinstance(entries[-1], MessageBlock):
            entries.append(MessageBlock())
        cast(MessageBlock, entries[-1]).add(entry)
    return Catalog(entries, parsed.end, parsed.lines), start


def _entry_of(record: dict[str, Any]) -> MessageLine | dict[str, Any]:
    """A record as the catalog keeps it: a well-formed message reduced, anything else whole."""
    if record.get("type") != "message" or not isinstance(record.get("stored_at", ""), str):
        # An odd stored_at reads differently as a header's stand-in: replay the record itself.
        return record
    line = _message_line(record)
    return line if line is not None else record


def _message_line(record: dict[str, Any]) -> MessageLine | None:
    """What the index takes from a message record; None when it is not a readable message."""
    message_id, seq = record.get("id"), record.get("seq")
    if not isinstance(message_id, str) or not isinstance(record.get("content"), str):
        return None
    stored_at = str(record.get("stored_at", ""))
    return MessageLine(
        id=message_id,
        seq=seq if isinstance(seq, int) and not isinstance(seq, bool) else None,
        stored_at=stored_at,
        day=day_of(record.get("timestamp")) or day_of(stored_at),
    )


class JsonlTopicStore(TopicRecordIndex[_Topic]):
    """Topic store on append-only JSONL files (see the module docstring for the layout).

    All methods are thread-safe: topic windows read in parallel threads while the splitter
    appends.

    Args:
        root: The thread's data directory; created if missing.
        visible: The sequence-number ranges this store answers from (a branch's records);
            ``None`` for every record on disk.
    """

    CATALOG_REFRESH_BYTES = 256 * 1024
    """A topic file's catalog is rewritten once this many bytes were appended past it."""

    def __init__(self, root: Path, *, visible: SeqRanges | None = None) -> None:
        self.root = Path(root)
        self._filter = normalize(visible) if visible is not None else None
        self._topics_dir = self.root / TOPICS_DIR
        self._links_path = self.root / LINKS_FILE
        self._time_index_path = self._topics_dir / TIME_INDEX_FILE
        self._shelf = FileArchiveShelf(self._topics_dir / ARCHIVED_DIR)
        self._lock = threading.RLock()
        self._clear_index()
        self._next_seq = 0
        self._unseen: dict[str, dict[str, int]] = {}
        """Per topic, the message records in its file the branch does not see: id to number."""
        self._topics_dir.mkdir(parents=True, exist_ok=True)
        self._load()
        if self._filter is None:
            self._ranges = normalize([(0, self._next_seq)])
        mend_time_index(self._time_index_path, self.time_index)

    def _visible(self, record: dict[str, Any]) -> bool:
        """Whether a record belongs to this store's branch (records without a number do).

        The branch's records are the ranges it was opened with plus what this store wrote.
        """
        return self._visible_seq(record.get("seq"))

    def _visible_seq(self, seq: object) -> bool:
        """Whether a record with this ``seq`` value belongs to this store's branch."""
        if self._filter is None or not isinstance(seq, int) or isinstance(seq, bool):
            return True
        return contains(self._ranges, seq)

    def _wrote(self, start: int, end: int) -> None:
        """Count records ``[start, end)`` this store just wrote as part of its branch."""
        self._ranges = with_range(self._ranges, start, end)

    def on_branch(self, ranges: SeqRanges) -> JsonlTopicStore:
        """The same directory as the branch whose checkpoint recorded ``ranges`` sees it."""
        return JsonlTopicStore(self.root, visible=ranges)

    # ----------------------------------------------------------------------------- loading

    def _take_seq(self, seq: object) -> int:
        """Keep the global counter ahead of every sequence number seen on disk."""
        if isinstance(seq, int) and not isinstance(seq, bool):
            self._next_seq = max(self._next_seq, seq + 1)
            return seq
        return self._next_seq

    def _load(self) -> None:
        loaded: list[tuple[_Topic, list[str]]] = []
        for path in sorted(self._topics_dir.glob("*.jsonl")):
            entry = self._load_topic(path)
            if entry is not None:
                loaded.append(entry)
        loaded.sort(key=lambda item: order_key(item[0]))
        for topic, _ in loaded:
            self._topics[topic.meta["id"]] = topic
        for topic, ids in loaded:  # a merged topic's ids go to the topic it was merged into
            self._register_owners(self._owner(topic.meta["id"]), ids)
        self._settle_splits()  # and a split topic's to its children
        for record in _read_records(self._links_path, repair=True):
            self._take_seq(record.get("seq"))
            if not self._visible(record):
                continue
            link = link_of(record) if record.get("type") == "link" else None
            if link is None:
                logger.warning("%s: skipping malformed link record", self._links_path)
                continue
            self._take_link(link)

    def _load_topic(self, path: Path) -> tuple[_Topic, list[str]] | None:
        scan, catalogued = _scan_topic_file(path, repair=True)
        loading = _TopicLoading(path)
        for entry in scan.entries:
            self._index_entry(loading, entry)
        unusable = catalogued == 0 and catalog_path(path).exists()  # logged by read_catalog
        if unusable or scan.covered_bytes - catalogued > self.CATALOG_REFRESH_BYTES:
            catalogued = _save_catalog(path, scan, catalogued)
        topic = loading.topic
        if topic is None:
            if not loading.other_branch:
                # Only a torn header, i.e. a crash inside create_topic: it never existed.
                logger.warning("%s: empty topic file ignored", path)
            return None
        topic.uncatalogued = scan.covered_bytes - catalogued
        return topic, loading.ids

    def _index_entry(self, loading: _TopicLoading, entry: Entry) -> None:
        """Index lines of a topic file, read from the file or replayed from its catalog."""
        if not isinstance(entry, MessageBlock):
            self._index_record(loading, entry)
        elif not self._index_block_at_once(loading, entry):
            for line in entry.lines():
                self._index_record(loading, line)

    def _index_block_at_once(self, loading: _TopicLoading, block: MessageBlock) -> bool:
        """Index a block of messages as :meth:`_index_record` would, one set operation each.

        Only for the common case (numbered, visible or all of another branch, no repeated
        id, after the header); False, with nothing changed, otherwise.
        """
        if not block.ids or None in block.seqs:
            return False
        seqs = cast(list[int], block.seqs)
        low, high = min(seqs), max(seqs)
        topic = loading.topic
        if loading.other_branch:
            self._next_seq = max(self._next_seq, high + 1)
            return True
        if topic is None or (self._filter is not None and not covers(self._ranges, low, high)):
            return False
        fresh = set(block.ids)
        if len(fresh) != len(block.ids) or not loading.seen.isdisjoint(fresh):
            return False
        self._next_seq = max(self._next_seq, high + 1)
        topic.last_seq = max(topic.last_seq, high)
        loading.seen |= fresh
        loading.ids += block.ids
        topic.meta["message_count"] += len(block.ids)
        stored = next((stored_at for stored_at in reversed(block.stored_at) if stored_at), "")
        if stored:
            topic.meta["updated_at"] = stored
        topic.days.update(day for day in set(block.days) if day is not None)
        return True

    def _index_record(
        self, loading: _TopicLoading, entry: dict[str, Any] | MessageLine | UnreadableLine
    ) -> None:
        """Index one line of a topic file (the one place that says what a line means)."""
        path = loading.path
        if isinstance(entry, UnreadableLine):
            logger.warning("%s: skipping unreadable line %d", path, entry.number)
            return
        record: dict[str, Any] = {}
        kind: object = "message"
        seq_value: object
        stored_at: object
        line: MessageLine | None
        if isinstance(entry, MessageLine):
            seq_value, stored_at, line = entry.seq, entry.stored_at, entry
        else:
            record = entry
            kind, seq_value, stored_at = (
                record.get("type"),
                record.get("seq"),
                record.get("stored_at"),
            )
            line = _message_line(record) if kind == "message" else None
        seq = self._take_seq(seq_value)
        if loading.other_branch or not self._visible_seq(seq_value):
            if loading.topic is not None and not loading.other_branch and line is not None:
                # What a split cut short left: taken, not written again, if split again here.
                self._unseen.setdefault(loading.topic.meta["id"], {})[line.id] = seq
            # Every record still counts for the sequence numbers, so that new ones never
            # collide with what another branch wrote.
            loading.other_branch = loading.other_branch or (
                kind == "topic" and loading.topic is None
            )
            return
        topic = loading.topic
        if kind == "topic" and topic is None:
            if record.get("id") != path.stem:
                logger.warning("%s: header names topic %r", path, record.get("id"))
            loading.topic = _Topic(
                meta=header_meta(path.stem, record, clock=_now),
                seq=seq,
                from_split=made_by_split(record),
                last_seq=seq,
            )
            return
        if topic is None:
            logger.warning("%s: no readable topic header; rebuilding metadata", path)
            meta = headless_meta(path.stem, stored_at, clock=_now)
            topic = loading.topic = _Topic(meta=meta, seq=seq)
        topic.last_seq = max(topic.last_seq, seq)
        if kind == "brief":
            apply_brief(topic.meta, record)
        elif kind == MERGED:
            topic.merged_into = merged_target(record)
            self._merges_changed()
            if topic.merged_into is None:
                logger.warning("%s: skipping a merge record naming no topic", path)
        elif kind == SUBTOPICS:
            if not topic.take_split(record, seq):
                logger.warning("%s: skipping an unreadable or second subtopics record", path)
        elif kind == "message":
            if line is None:
                logger.warning("%s: skipping malformed message record", path)
                return
            if line.id in loading.seen:
                logger.warning("%s: duplicate message id %s ignored", path, line.id)
                return
            loading.seen.add(line.id)
            loading.ids.append(line.id)
            topic.meta["message_count"] += 1
            if line.stored_at:
                topic.meta["updated_at"] = line.stored_at
            if line.day is not None:
                topic.days.add(line.day)
        elif kind != "topic":
            logger.warning("%s: skipping record of unknown type %r", path, kind)

    def _stored(self, topic: _Topic) -> None:
        """Past ``CATALOG_REFRESH_BYTES`` appended to a topic file, catalog the file.

        The file is read back from the end of its catalog rather than extended from memory:
        another store (another branch) may have appended to it too. Amortised over
        ``CATALOG_REFRESH_BYTES`` of appends, a failed attempt included (it is retried only
        after as many bytes again). Its decoded copy is saved again then too, if the file has
        outgrown it (``decoded_topics``): the next process's first read then writes nothing.
        """
        if topic.uncatalogued <= self.CATALOG_REFRESH_BYTES:
            return
        topic.uncatalogued = 0
        path = self.file_path(topic.meta["id"])
        try:
            scan, catalogued = _scan_topic_file(path, repair=False)
        except OSError as error:  # the append itself has succeeded: never undo that
            logger.warning("%s: could not read it back for its catalog (%s)", path, error)
            return
        _save_catalog(path, scan, catalogued)
        refresh_decoded(path)

    def _loaded(self, topic: _Topic) -> tuple[list[StoredMessage], dict[str, int]]:
        """The topic's messages, parsed from its file once and then served from memory."""
        if topic.cache is None or topic.positions is None:
            records = self._message_records(self.file_path(topic.meta["id"]))
            found = records.messages
            if self._filter is not None:
                found = list(compress(found, map(self._visible_seq, records.seqs)))
            # Built in C; a repeated id (a re-run after a crash) keeps its first copy.
            ids = list(map(itemgetter("id"), found))
            positions = dict(zip(ids, range(len(ids)), strict=True))
            messages = found
            if len(positions) < len(ids):
                messages, positions = [], {}
                for message in found:
                    if message["id"] not in positions:
                        positions[message["id"]] = len(messages)
                        messages.append(message)
            topic.cache, topic.positions = messages, positions
        return topic.cache, topic.positions

    @staticmethod
    def _message_records(path: Path) -> MessageRecords:
        """A topic file's message records, every branch's, in file order (``decoded_topics``)."""
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return MessageRecords()
        saved = message_records(path, raw)
        if saved is not None:
            return saved
        found = MessageRecords()
        for record in _read_records(path, repair=False):  # damaged lines skipped, and logged
            seq = record.get("seq") if record.get("type") == "message" else None
            message = take_message(record) if record.get("type") == "message" else None
            if message is not None:
                found.add(seq, message)
        return found

    def raw_records(self) -> list[tuple[str | None, dict[str, Any]]]:
        """Every readable record on disk, every branch's, as ``(topic id, record)``.

        Topic files in name order, each in file order, then the links (topic id None); damaged
        lines are skipped as on open. For copying the thread to another store.
        """
        with self._lock:
            found: list[tuple[str | None, dict[str, Any]]] = []
            for path in sorted(self._topics_dir.glob("*.jsonl")):
                found += [(path.stem, record) for record in _read_records(path, repair=False)]
            found += [(None, record) for record in _read_records(self._links_path, repair=False)]
            return found

    # ------------------------------------------------------------------------- the protocol

    def file_path(self, topic_id: str) -> Path:
        """Absolute path of a topic's JSONL file (whether or not the topic exists)."""
        return self._topics_dir / f"{topic_id}.jsonl"

    # ----------------------------------------------------------------------------- writing

    def _clock(self) -> str:
        return _now()  # the module's, which tests freeze

    def _days_changed(self) -> None:
        save_time_index(self._time_index_path, self.time_index(), full_disk_fails=True)

    def _topic_id_taken(self, topic_id: str) -> bool:
        return self.file_path(topic_id).exists()

    def _append_lines(
        self, path: Path, records: list[dict[str, Any]], *, new_file: bool = False
    ) -> tuple[int, int]:
        """Append records under fresh sequence numbers in one durable write.

        Returns:
            The first record's number and the bytes written.
        """
        start = self._next_seq
        data = b"".join(
            _encode(_numbered(record, start + offset)) for offset, record in enumerate(records)
        )
        append_durably(path, data)
        if new_file:
            fsync_directory(path.parent)
        self._next_seq += len(records)
        self._wrote(start, start + len(records))
        return start, len(data)

    def _store(self, topic_id: str | None, records: list[dict[str, Any]]) -> int:
        if topic_id is None:
            return self._append_lines(self._links_path, records)[0]
        start, size = self._append_lines(self.file_path(topic_id), records)
        topic = self._topics[topic_id]
        topic.uncatalogued += size
        topic.last_seq = max(topic.last_seq, start + len(records) - 1)
        return start

    def _store_topic(self, header: dict[str, Any], meta: TopicMeta) -> _Topic:
        seq, size = self._append_lines(self.file_path(meta["id"]), [header], new_file=True)
        return _Topic(meta=meta, seq=seq, cache=[], positions={}, uncatalogued=size, last_seq=seq)

    def _add_message(self, topic: _Topic, message: StoredMessage, seq: int, stored_at: str) -> None:
        if topic.cache is not None and topic.positions is not None:
            topic.positions[message["id"]] = len(topic.cache)
            topic.cache.append(message)
        topic.count(message, stored_at)
        topic.last_seq = max(topic.last_seq, seq)

    def _unseen_copies(
        self, topic: _Topic, messages: Sequence[StoredMessage]
    ) -> list[tuple[int, str]]:
        """Unseen records of the first ``messages`` at the end of the topic's file, unchanged.

        Only records past everything the branch sees of the topic, in the order of
        ``messages``, with the same content: taking them is then the append itself (its
        order, its text), only earlier. Anything else is appended anew, as it always was.
        """
        unseen = self._unseen.get(topic.meta["id"])
        if not unseen or messages[0]["id"] not in unseen:
            return []
        seqs: list[int] = []
        for message in messages:
            seq = unseen.get(message["id"])
            if seq is None or seq <= (seqs[-1] if seqs else topic.last_seq):
                break
            seqs.append(seq)
        wanted = set(seqs)
        found = {
            record.get("seq"): record
            for record in _read_records(self.file_path(topic.meta["id"]), repair=False)
            if record.get("type") == "message" and record.get("seq") in wanted
        }
        held: list[tuple[int, str]] = []
        for message, seq in zip(messages, seqs, strict=False):
            record = found.get(seq)
            if record is None or not _same_message(record, message):
                break
            held.append((seq, str(record.get("stored_at") or "")))
        return held

    def _take_unseen(self, seqs: Sequence[int]) -> None:
        taken = set(seqs)
        for start in taken:
            self._wrote(start, start + 1)
        for unseen in self._unseen.values() if taken else ():
            for message_id in [i for i, seq in unseen.items() if seq in taken]:
                del unseen[message_id]

    # -------------------------------------------------------------------------------- extras

    def transcript(self) -> list[StoredMessage]:
        """Every stored message across topics, ordered by time, then by storing order.

        A message's time is its ``timestamp`` or, without a readable one, when it was stored.
        This is how the full conversation is recovered from the topic files alone.
        """
        with self._lock:
            keyed: list[tuple[datetime, int, StoredMessage]] = []
            for topic_id in self._topics:
                for record in _read_records(self.file_path(topic_id), repair=False):
                    if record.get("type") != "message" or not self._visible(record):
                        continue
                    message = message_from_record(record)
                    # Only the copy the index placed: a split placed it in a child.
                    if message is None or self._locations.get(message["id"]) != self._holder(
                        topic_id, message["id"]
                    ):
                        continue
                    when = (
                        parse_time(message.get("timestamp"))
                        or parse_time(record.get("stored_at"))
                        or NEVER
                    )
                    seq = record.get("seq")
                    keyed.append((when, seq if isinstance(seq, int) else 0, message))
            keyed.sort(key=lambda item: (item[0], item[1]))
            seen: set[str] = set()
            ordered: list[StoredMessage] = []
            for _, _, message in keyed:
                if message["id"] not in seen:
                    seen.add(message["id"])
                    ordered.append(message)
            return ordered


def _same_message(record: dict[str, Any], message: StoredMessage) -> bool:
    """Whether a stored record holds ``message`` exactly, as it would be written now."""
    stored = message_from_record(record)
    try:
        return stored is not None and stored == json.loads(_encode(dict(message)))
    except (TypeError, ValueError):  # not storable: the append itself says so
        return False


def _save_catalog(path: Path, scan: Catalog, catalogued: int) -> int:
    """Write a topic file's catalog; returns the bytes now catalogued (as before on failure).

    The catalog is a cache: failing to write it costs a longer parse at the next open, so the
    failure is logged, never raised (the append that led here has succeeded).
    """
    try:
        write_catalog(path, scan)
    except (OSError, ValueError) as error:
        logger.warning("%s: could not write its catalog (%s)", path, error)
        return catalogued
    return scan.covered_bytes
