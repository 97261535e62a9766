"""Append-only JSONL topic store: one file per topic, one directory per thread.

Layout under ``root``::

    topics/<topic_id>.jsonl   # {"type": "topic", ...} header, then "message" and "brief" lines
    links.jsonl               # {"type": "link", "from": ..., "to": ..., "kind": ...} lines

Every file is only ever appended to, so a crash can at worst tear the last line; that line is
dropped (and reported) when the store is reopened. Everything else the store answers comes from
an in-memory index rebuilt from the files on open, so the files stay the single source of truth.
What that rebuild derives from a topic file is cached beside it (``topics/<topic_id>.catalog``,
see ``topic_catalog``), so that a reopen parses only the lines appended since.

Only one :class:`JsonlTopicStore` may write to a directory at a time: the index is not re-read
when another process appends.

Every record carries a sequence number. A store opened with ``visible`` ranges (see
``seq_ranges``) answers only from the records in them, plus what it writes itself: that is how
a branch of the checkpoint history sees its own topics and nothing of another branch.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from langgraph_topics.state.records import StoredMessage, TopicMeta
from langgraph_topics.stores.durable import append_durably, fsync_directory, truncate_durably
from langgraph_topics.stores.jsonl_lines import decode_line, decode_lines
from langgraph_topics.stores.seq_ranges import (
    SeqRanges,
    contains,
    covers,
    normalize,
    with_range,
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
from langgraph_topics.summaries.card import SummaryCard

logger = logging.getLogger(__name__)

TOPICS_DIR = "topics"
LINKS_FILE = "links.jsonl"

# Keys the store adds to a message line; a message carrying one of them could not be told apart
# from the store's own bookkeeping when read back, so such messages are rejected.
_RESERVED_KEYS = frozenset({"type", "seq", "stored_at"})


@dataclass
class _Topic:
    """What the index keeps per topic (messages themselves are loaded lazily)."""

    meta: TopicMeta
    seq: int
    """Global sequence number of the topic's first record: ties creation times."""
    days: set[str] = field(default_factory=set)
    cache: list[StoredMessage] | None = None
    """Parsed messages once someone asked for them; kept in step with appends."""
    by_id: dict[str, StoredMessage] | None = None
    positions: dict[str, int] | None = None
    """Each cached message's index in ``cache``, so a neighbourhood is found without a scan."""
    uncatalogued: int = 0
    """Bytes appended to the file (by this store) since its catalog last covered it, about."""


@dataclass
class _TopicLoading:
    """What indexing a topic file's lines has found so far."""

    path: Path
    topic: _Topic | None = None
    ids: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    other_branch: bool = False
    """The header belongs to another branch: so does the whole file."""


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _parse_time(value: object) -> datetime | None:
    """Parse an ISO-8601 time; naive times count as UTC so that they compare with aware ones."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _day(value: object) -> str | None:
    """Return a timestamp's calendar day in its own offset (the day the user saw)."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value).date().isoformat()
    except ValueError:
        return None


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
        day=_day(record.get("timestamp")) or _day(stored_at),
    )


def _message_from_record(record: dict[str, Any]) -> StoredMessage | None:
    message = {key: value for key, value in record.items() if key not in _RESERVED_KEYS}
    if not isinstance(message.get("id"), str) or not isinstance(message.get("content"), str):
        return None
    return cast(StoredMessage, message)


class JsonlTopicStore:
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
        self._lock = threading.RLock()
        self._topics: dict[str, _Topic] = {}
        self._locations: dict[str, str] = {}
        self._links: list[tuple[str, str, str]] = []
        self._next_seq = 0
        self._ranges: SeqRanges = list(self._filter or [])
        self._topics_dir.mkdir(parents=True, exist_ok=True)
        self._load()
        if self._filter is None:
            self._ranges = normalize([(0, self._next_seq)])

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

    def visible_ranges(self) -> SeqRanges:
        """The sequence numbers this store answers from: what the checkpoint records."""
        with self._lock:
            return list(self._ranges)

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
        # Register ids in topic order so that, should a message id ever sit in two files, the
        # older topic keeps it, whatever order the directory listing came in.
        loaded.sort(key=lambda item: self._order_key(item[0]))
        for topic, ids in loaded:
            self._topics[topic.meta["id"]] = topic
            if self._locations.keys().isdisjoint(ids):
                self._locations.update(dict.fromkeys(ids, topic.meta["id"]))
                continue
            for message_id in ids:
                owner = self._locations.setdefault(message_id, topic.meta["id"])
                if owner != topic.meta["id"]:
                    logger.warning(
                        "message %s is stored in both %s and %s; using %s",
                        message_id,
                        owner,
                        topic.meta["id"],
                        owner,
                    )
        for record in _read_records(self._links_path, repair=True):
            self._take_seq(record.get("seq"))
            if not self._visible(record):
                continue
            source, target, kind = record.get("from"), record.get("to"), record.get("kind")
            if record.get("type") != "link" or not all(
                isinstance(value, str) for value in (source, target, kind)
            ):
                logger.warning("%s: skipping malformed link record", self._links_path)
                continue
            link = (cast(str, source), cast(str, target), cast(str, kind))
            if link not in self._links:
                self._links.append(link)

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
            # Every record still counts for the sequence numbers, so that new ones never
            # collide with what another branch wrote.
            loading.other_branch = loading.other_branch or (
                kind == "topic" and loading.topic is None
            )
            return
        topic = loading.topic
        if kind == "topic" and topic is None:
            topic_id = path.stem
            if record.get("id") != topic_id:
                logger.warning("%s: header names topic %r", path, record.get("id"))
            created_at = str(record.get("created_at") or _now())
            loading.topic = _Topic(
                meta=self._new_meta(
                    topic_id,
                    name=str(record.get("name", topic_id)),
                    brief=str(record.get("brief", "")),
                    parent_id=_optional_str(record.get("parent_id")),
                    created_at=created_at,
                ),
                seq=seq,
            )
            return
        if topic is None:
            # The header line was damaged: rebuild the topic from what follows rather than
            # lose its messages.
            logger.warning("%s: no readable topic header; rebuilding metadata", path)
            created_at = str(stored_at or _now())
            topic = loading.topic = _Topic(
                meta=self._new_meta(
                    path.stem, name=path.stem, brief="", parent_id=None, created_at=created_at
                ),
                seq=seq,
            )
        if kind == "brief":
            topic.meta["name"] = str(record.get("name", topic.meta["name"]))
            topic.meta["brief"] = str(record.get("brief", topic.meta["brief"]))
            topic.meta["updated_at"] = str(record.get("updated_at", topic.meta["updated_at"]))
            # A brief line without a card (written before cards existed) leaves none.
            topic.meta.pop("brief_card", None)
            if isinstance(record.get("card"), dict):
                topic.meta["brief_card"] = record["card"]
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

    def _catalog_appended(self, topic: _Topic, size: int) -> None:
        """Count bytes just appended to a topic file; past the threshold, catalog the file.

        The file is read back from the end of its catalog rather than extended from memory:
        another store (another branch) may have appended to it too. Amortised over
        ``CATALOG_REFRESH_BYTES`` of appends, a failed attempt included (it is retried only
        after as many bytes again).
        """
        topic.uncatalogued += size
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

    def _new_meta(
        self, topic_id: str, *, name: str, brief: str, parent_id: str | None, created_at: str
    ) -> TopicMeta:
        return TopicMeta(
            id=topic_id,
            name=name,
            brief=brief,
            parent_id=parent_id,
            created_at=created_at,
            updated_at=created_at,
            message_count=0,
            file=f"{TOPICS_DIR}/{topic_id}.jsonl",
        )

    def _order_key(self, topic: _Topic) -> tuple[datetime, int]:
        created = _parse_time(topic.meta["created_at"]) or datetime.max.replace(tzinfo=UTC)
        return created, topic.seq

    def _topic(self, topic_id: str) -> _Topic:
        try:
            return self._topics[topic_id]
        except KeyError:
            raise KeyError(f"unknown topic {topic_id!r}") from None

    def _load_messages(self, topic: _Topic) -> list[StoredMessage]:
        """Return the topic's messages, parsed from its file once and then served from memory."""
        if topic.cache is None:
            messages: list[StoredMessage] = []
            by_id: dict[str, StoredMessage] = {}
            positions: dict[str, int] = {}
            for record in _read_records(self.file_path(topic.meta["id"]), repair=False):
                if record.get("type") != "message" or not self._visible(record):
                    continue
                message = _message_from_record(record)
                if message is not None and message["id"] not in by_id:
                    positions[message["id"]] = len(messages)
                    messages.append(message)
                    by_id[message["id"]] = message
            topic.cache, topic.by_id, topic.positions = messages, by_id, positions
        return topic.cache

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

    def create_topic(
        self, name: str, brief: str, *, parent_id: str | None = None, created_at: str | None = None
    ) -> TopicMeta:
        """Create an empty topic and return its metadata.

        Args:
            name: Short topic name.
            brief: The topic's brief (its activation fingerprint).
            parent_id: The topic this one was split from, if any; must exist.
            created_at: ISO-8601 creation time; now (UTC) when omitted.

        Returns:
            The new topic's metadata, with a fresh ``topic-xxxxxxxx`` id.

        Raises:
            KeyError: ``parent_id`` names an unknown topic.
            ValueError: ``created_at`` is not an ISO-8601 time.
        """
        if created_at is not None and _parse_time(created_at) is None:
            raise ValueError(f"created_at is not an ISO-8601 time: {created_at!r}")
        with self._lock:
            if parent_id is not None:
                self._topic(parent_id)
            created = created_at or _now()
            while True:
                topic_id = f"topic-{secrets.token_hex(4)}"
                if topic_id not in self._topics and not self.file_path(topic_id).exists():
                    break
            seq = self._next_seq
            record = {
                "type": "topic",
                "seq": seq,
                "id": topic_id,
                "name": name,
                "brief": brief,
                "parent_id": parent_id,
                "created_at": created,
            }
            header = _encode(record)
            append_durably(self.file_path(topic_id), header)
            fsync_directory(self._topics_dir)
            self._next_seq += 1
            self._wrote(seq, seq + 1)
            meta = self._new_meta(
                topic_id, name=name, brief=brief, parent_id=parent_id, created_at=created
            )
            self._topics[topic_id] = _Topic(
                meta=meta, seq=seq, cache=[], by_id={}, positions={}, uncatalogued=len(header)
            )
            return meta.copy()

    def append(self, topic_id: str, messages: Sequence[StoredMessage]) -> None:
        """Append messages to a topic in one durable write.

        Args:
            topic_id: The topic to append to.
            messages: Messages with ids unique across the thread.

        Raises:
            KeyError: Unknown topic.
            ValueError: A message id is already stored, repeated within ``messages``, missing,
                or a message uses one of the store's reserved keys. Nothing is written then.
            TypeError: A message holds something JSON cannot encode. Nothing is written then.
        """
        with self._lock:
            topic = self._topic(topic_id)
            if not messages:
                return
            batch: set[str] = set()
            for message in messages:
                message_id = message.get("id")
                if not isinstance(message_id, str) or not message_id:
                    raise ValueError(f"message without a string id: {message!r:.200}")
                if message_id in self._locations:
                    raise ValueError(
                        f"message {message_id!r} is already stored in "
                        f"{self._locations[message_id]!r}"
                    )
                if message_id in batch:
                    raise ValueError(f"message {message_id!r} appears twice in one append")
                reserved = _RESERVED_KEYS.intersection(message)
                if reserved:
                    raise ValueError(f"message {message_id!r} uses reserved keys {reserved}")
                batch.add(message_id)
            stored_at = _now()
            data = bytearray()
            for offset, message in enumerate(messages):
                record = {
                    "type": "message",
                    "seq": self._next_seq + offset,
                    "stored_at": stored_at,
                    **message,
                }
                data += _encode(record)
            append_durably(self.file_path(topic_id), bytes(data))
            # Memory changes only after the write is durable, so a failed write changes nothing.
            self._wrote(self._next_seq, self._next_seq + len(messages))
            self._next_seq += len(messages)
            for message in messages:
                copy = message.copy()
                self._locations[copy["id"]] = topic_id
                day = _day(copy.get("timestamp")) or _day(stored_at)
                if day is not None:
                    topic.days.add(day)
                if topic.cache is not None and topic.by_id is not None:
                    if topic.positions is not None:
                        topic.positions[copy["id"]] = len(topic.cache)
                    topic.cache.append(copy)
                    topic.by_id[copy["id"]] = copy
            topic.meta["message_count"] += len(messages)
            topic.meta["updated_at"] = stored_at
            self._catalog_appended(topic, len(data))

    def set_brief(
        self, topic_id: str, name: str, brief: str, *, card: SummaryCard | None = None
    ) -> None:
        """Replace the topic's name and brief (appended; the last brief line wins).

        Args:
            topic_id: The topic.
            name: Its new name.
            brief: Its new brief.
            card: The brief as a structured card (seed 001 T3), kept on the same line.

        Raises:
            KeyError: Unknown topic.
        """
        with self._lock:
            topic = self._topic(topic_id)
            updated_at = _now()
            record: dict[str, Any] = {
                "type": "brief",
                "seq": self._next_seq,
                "name": name,
                "brief": brief,
                "updated_at": updated_at,
            }
            if card is not None:
                record["card"] = card
            line = _encode(record)
            append_durably(self.file_path(topic_id), line)
            self._wrote(self._next_seq, self._next_seq + 1)
            self._next_seq += 1
            topic.meta["name"] = name
            topic.meta["brief"] = brief
            topic.meta["updated_at"] = updated_at
            topic.meta.pop("brief_card", None)
            if card is not None:
                topic.meta["brief_card"] = card
            self._catalog_appended(topic, len(line))

    def messages(self, topic_id: str) -> list[StoredMessage]:
        """All messages of a topic, in the order they were appended.

        The list is fresh; the messages are the store's cached records, shared by every
        reader and never to be mutated (copying a long topic's messages on every turn was
        the largest cost of a turn that grows with history).

        Raises:
            KeyError: Unknown topic.
        """
        with self._lock:
            return list(self._load_messages(self._topic(topic_id)))

    def neighbours(self, message_id: str, before: int, after: int) -> list[StoredMessage]:
        """A stored message with up to ``before``/``after`` messages around it in its topic.

        Shared records, as :meth:`messages`; ``[]`` for an unknown id.
        """
        with self._lock:
            topic_id = self._locations.get(message_id)
            if topic_id is None:
                return []
            topic = self._topics[topic_id]
            cache = self._load_messages(topic)
            place = topic.positions.get(message_id) if topic.positions is not None else None
            if place is None:
                return []
            return cache[max(0, place - before) : place + after + 1]

    def get_messages(self, message_ids: Sequence[str]) -> dict[str, StoredMessage]:
        """Look messages up by id across all topics; unknown ids are left out."""
        with self._lock:
            found: dict[str, StoredMessage] = {}
            for message_id in message_ids:
                topic_id = self._locations.get(message_id)
                if topic_id is None or message_id in found:
                    continue
                topic = self._topics[topic_id]
                self._load_messages(topic)
                message = topic.by_id.get(message_id) if topic.by_id is not None else None
                if message is not None:
                    found[message_id] = message.copy()
            return found

    def locate(self, message_id: str) -> str | None:
        """Return the topic holding a message, or None."""
        with self._lock:
            return self._locations.get(message_id)

    def message_ids(self) -> dict[str, str]:
        """Every stored message id mapped to its topic id."""
        with self._lock:
            return dict(self._locations)

    def topic_ids(self) -> list[str]:
        """Ids of all topics, oldest first (by ``created_at``, then by creation order)."""
        with self._lock:
            return [
                topic.meta["id"] for topic in sorted(self._topics.values(), key=self._order_key)
            ]

    def meta(self, topic_id: str) -> TopicMeta:
        """Return a copy of a topic's metadata.

        Raises:
            KeyError: Unknown topic.
        """
        with self._lock:
            return self._topic(topic_id).meta.copy()

    def link(self, from_id: str, to_id: str, kind: str) -> None:
        """Record a relation between two topics; recording the same relation again is a no-op.

        Raises:
            KeyError: Either topic is unknown.
            ValueError: A topic linked to itself.
        """
        with self._lock:
            self._topic(from_id)
            self._topic(to_id)
            if from_id == to_id:
                raise ValueError(f"cannot link topic {from_id!r} to itself")
            link = (from_id, to_id, kind)
            if link in self._links:
                return
            record = {
                "type": "link",
                "seq": self._next_seq,
                "from": from_id,
                "to": to_id,
                "kind": kind,
                "created_at": _now(),
            }
            append_durably(self._links_path, _encode(record))
            self._wrote(self._next_seq, self._next_seq + 1)
            self._next_seq += 1
            self._links.append(link)

    def links(self, topic_id: str) -> list[tuple[str, str]]:
        """Relations of a topic as ``(other_id, kind)``, in either direction, oldest first.

        The direction of a ``subtopic`` relation can be read from ``meta(...)["parent_id"]``.
        """
        with self._lock:
            related: list[tuple[str, str]] = []
            for source, target, kind in self._links:
                if topic_id in (source, target):
                    pair = (target if source == topic_id else source, kind)
                    if pair not in related:
                        related.append(pair)
            return related

    def time_index(self) -> dict[str, list[str]]:
        """Topics per day, days ascending, topics within a day oldest first.

        A message counts on the day of its ``timestamp`` (in the offset it was written with) or,
        without a readable one, on the day it was stored. Topics without messages are left out.
        """
        with self._lock:
            index: dict[str, list[str]] = {}
            for topic_id in self.topic_ids():
                for day in self._topics[topic_id].days:
                    index.setdefault(day, []).append(topic_id)
            return {day: index[day] for day in sorted(index)}

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
                    message = _message_from_record(record)
                    if message is None or self._locations.get(message["id"]) != topic_id:
                        continue
                    when = (
                        _parse_time(message.get("timestamp"))
                        or _parse_time(record.get("stored_at"))
                        or datetime.max.replace(tzinfo=UTC)
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


def _optional_str(value: object) -> str | None:
    return value if isinstance(value, str) else None
