"""Append-only JSONL topic store: one file per topic, one directory per thread.

Layout under ``root``::

    topics/<topic_id>.jsonl   # {"type": "topic", ...} header, then "message" and "brief" lines
    links.jsonl               # {"type": "link", "from": ..., "to": ..., "kind": ...} lines

Every file is only ever appended to, so a crash can at worst tear the last line; that line is
dropped (and reported) when the store is reopened. Everything else the store answers comes from
an in-memory index rebuilt from the files on open, so the files stay the single source of truth.

Only one :class:`JsonlTopicStore` may write to a directory at a time: the index is not re-read
when another process appends.

Every record carries a sequence number. A store opened with ``visible`` ranges (see
``seq_ranges``) answers only from the records in them, plus what it writes itself: that is how
a branch of the checkpoint history sees its own topics and nothing of another branch.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from langgraph_topics.state.records import StoredMessage, TopicMeta
from langgraph_topics.stores.durable import append_durably, fsync_directory
from langgraph_topics.stores.seq_ranges import SeqRanges, contains, normalize, with_range

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


def _read_records(path: Path, *, repair: bool) -> Iterator[dict[str, Any]]:
    r"""Yield the JSON object records of a JSONL file, skipping (and logging) damaged lines.

    Lines are split on ``\n`` bytes only: ``str.splitlines`` would also split on U+2028 and
    friends, which ``json.dumps(ensure_ascii=False)`` writes unescaped inside strings.

    A last line without its newline is the trace of a torn write. With ``repair`` it is cut off
    so that later appends start on a fresh line (or, if it happens to be a complete record,
    its newline is restored); damaged lines elsewhere are skipped but never removed.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return
    lines = raw.split(b"\n")
    tail = lines.pop()  # empty when the file ends with a newline, as it should
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        record = decode_line(line)
        if record is None:
            logger.warning("%s: skipping unreadable line %d", path, number)
            continue
        yield record
    if not tail:
        return
    record = decode_line(tail) if tail.strip(b"\x00 \t\r") else None
    if record is not None:
        if repair:
            logger.warning("%s: last line had no newline; completing it", path)
            append_durably(path, b"\n")
        yield record
        return
    logger.warning("%s: ignoring torn last line (%d bytes, crash during a write?)", path, len(tail))
    if repair:
        with path.open("r+b") as handle:
            handle.truncate(len(raw) - len(tail))
            handle.flush()
            os.fsync(handle.fileno())


def decode_line(line: bytes) -> dict[str, Any] | None:
    """One JSONL line as a JSON object, or None when it is not one (damaged, torn, other)."""
    try:
        record = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return record if isinstance(record, dict) else None


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
        seq = record.get("seq")
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

    def _take_seq(self, record: dict[str, Any]) -> int:
        """Keep the global counter ahead of every sequence number seen on disk."""
        seq = record.get("seq")
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
            self._take_seq(record)
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
        topic_id = path.stem
        topic: _Topic | None = None
        ids: list[str] = []
        seen: set[str] = set()
        other_branch = False
        for record in _read_records(path, repair=True):
            kind = record.get("type")
            seq = self._take_seq(record)
            if other_branch or not self._visible(record):
                # Every record still counts for the sequence numbers, so that new ones never
                # collide with what another branch wrote.
                other_branch = other_branch or (kind == "topic" and topic is None)
                continue
            if kind == "topic" and topic is None:
                if record.get("id") != topic_id:
                    logger.warning("%s: header names topic %r", path, record.get("id"))
                created_at = str(record.get("created_at") or _now())
                topic = _Topic(
                    meta=self._new_meta(
                        topic_id,
                        name=str(record.get("name", topic_id)),
                        brief=str(record.get("brief", "")),
                        parent_id=_optional_str(record.get("parent_id")),
                        created_at=created_at,
                    ),
                    seq=seq,
                )
                continue
            if topic is None:
                # The header line was damaged: rebuild the topic from what follows rather than
                # lose its messages.
                logger.warning("%s: no readable topic header; rebuilding metadata", path)
                created_at = str(record.get("stored_at") or _now())
                topic = _Topic(
                    meta=self._new_meta(
                        topic_id, name=topic_id, brief="", parent_id=None, created_at=created_at
                    ),
                    seq=seq,
                )
            if kind == "brief":
                topic.meta["name"] = str(record.get("name", topic.meta["name"]))
                topic.meta["brief"] = str(record.get("brief", topic.meta["brief"]))
                topic.meta["updated_at"] = str(record.get("updated_at", topic.meta["updated_at"]))
            elif kind == "message":
                message = _message_from_record(record)
                if message is None:
                    logger.warning("%s: skipping malformed message record", path)
                    continue
                if message["id"] in seen:
                    logger.warning("%s: duplicate message id %s ignored", path, message["id"])
                    continue
                seen.add(message["id"])
                ids.append(message["id"])
                topic.meta["message_count"] += 1
                stored_at = str(record.get("stored_at", ""))
                if stored_at:
                    topic.meta["updated_at"] = stored_at
                day = _day(message.get("timestamp")) or _day(stored_at)
                if day is not None:
                    topic.days.add(day)
            elif kind != "topic":
                logger.warning("%s: skipping record of unknown type %r", path, kind)
        if topic is None:
            if not other_branch:
                # Only a torn header, i.e. a crash inside create_topic: it never existed.
                logger.warning("%s: empty topic file ignored", path)
            return None
        return topic, ids

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
            for record in _read_records(self.file_path(topic.meta["id"]), repair=False):
                if record.get("type") != "message" or not self._visible(record):
                    continue
                message = _message_from_record(record)
                if message is not None and message["id"] not in by_id:
                    messages.append(message)
                    by_id[message["id"]] = message
            topic.cache, topic.by_id = messages, by_id
        return topic.cache

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
            append_durably(self.file_path(topic_id), _encode(record))
            fsync_directory(self._topics_dir)
            self._next_seq += 1
            self._wrote(seq, seq + 1)
            meta = self._new_meta(
                topic_id, name=name, brief=brief, parent_id=parent_id, created_at=created
            )
            self._topics[topic_id] = _Topic(meta=meta, seq=seq, cache=[], by_id={})
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
                    topic.cache.append(copy)
                    topic.by_id[copy["id"]] = copy
            topic.meta["message_count"] += len(messages)
            topic.meta["updated_at"] = stored_at

    def set_brief(self, topic_id: str, name: str, brief: str) -> None:
        """Replace the topic's name and brief (appended; the last brief line wins).

        Raises:
            KeyError: Unknown topic.
        """
        with self._lock:
            topic = self._topic(topic_id)
            updated_at = _now()
            record = {
                "type": "brief",
                "seq": self._next_seq,
                "name": name,
                "brief": brief,
                "updated_at": updated_at,
            }
            append_durably(self.file_path(topic_id), _encode(record))
            self._wrote(self._next_seq, self._next_seq + 1)
            self._next_seq += 1
            topic.meta["name"] = name
            topic.meta["brief"] = brief
            topic.meta["updated_at"] = updated_at

    def messages(self, topic_id: str) -> list[StoredMessage]:
        """All messages of a topic, in the order they were appended.

        The list and the dicts are fresh copies; nested values (``tool_calls``) are shared
        with the store's cache and must not be mutated.

        Raises:
            KeyError: Unknown topic.
        """
        with self._lock:
            return [message.copy() for message in self._load_messages(self._topic(topic_id))]

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


def _optional_str(value: object) -> str | None:
    return value if isinstance(value, str) else None
