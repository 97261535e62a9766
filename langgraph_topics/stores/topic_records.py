"""What both topic stores make of a thread's records, and the reads they answer from memory.

The JSONL store (``topic_store``) and the ``BaseStore`` one (``base_store_topics``) keep the
same records (``topic`` headers, ``message``, ``brief`` and ``link`` records, each with a
sequence number) and the same in-memory index of them: per topic its metadata, first number
and days, each message id's topic, the links. :class:`TopicRecordIndex` holds that index and
answers the reads of the ``TopicStore`` protocol from it; a store subclasses it and adds where
the records live (files and catalogs, or ``BaseStore`` items and a head) and how the messages
of a topic are held (parsed lazily per topic, or all on open).
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar, cast

from langgraph_topics.state.records import ArchivedTopic, StoredMessage, TopicMeta
from langgraph_topics.stores.archive_shelves import ArchiveShelf
from langgraph_topics.stores.merged_topics import combined, live_topic, members, merge_record
from langgraph_topics.stores.seq_ranges import SeqRanges
from langgraph_topics.summaries.card import SummaryCard

TOPICS_DIR = "topics"
"""Where the JSONL store keeps topic files; named by every topic's ``file`` metadata."""

RESERVED_KEYS = frozenset({"type", "seq", "stored_at"})
"""Keys the stores add to a message record; a message carrying one of them could not be told
apart from the store's own bookkeeping when read back, so such messages are rejected."""

NEVER = datetime.max.replace(tzinfo=UTC)
"""The time of a record without a readable one: after every other."""


def now() -> str:
    """The current time as the stores write it (ISO-8601, UTC)."""
    return datetime.now(UTC).isoformat()


def parse_time(value: object) -> datetime | None:
    """Parse an ISO-8601 time; naive times count as UTC so that they compare with aware ones."""
    parsed = _from_iso(value)
    if parsed is None or parsed.tzinfo is not None:
        return parsed
    return parsed.replace(tzinfo=UTC)


def day_of(value: object) -> str | None:
    """Return a timestamp's calendar day in its own offset (the day the user saw)."""
    parsed = _from_iso(value)
    return parsed.date().isoformat() if parsed is not None else None


def _from_iso(value: object) -> datetime | None:
    """An ISO-8601 time as written (naive or with its offset); None if it is not one."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def optional_str(value: object) -> str | None:
    """``value`` if it is a string, else None."""
    return value if isinstance(value, str) else None


def message_from_record(record: dict[str, Any]) -> StoredMessage | None:
    """The message a ``message`` record holds; None when it has no string id and content."""
    message = {key: value for key, value in record.items() if key not in RESERVED_KEYS}
    if not isinstance(message.get("id"), str) or not isinstance(message.get("content"), str):
        return None
    return cast(StoredMessage, message)


def new_meta(
    topic_id: str, *, name: str, brief: str, parent_id: str | None, created_at: str
) -> TopicMeta:
    """The metadata of a topic without messages yet."""
    return TopicMeta(
        id=topic_id,
        name=name,
        brief=brief,
        parent_id=parent_id,
        created_at=created_at,
        updated_at=created_at,
        message_count=0,
        # Where the JSONL store keeps it: the same metadata whichever store holds it.
        file=f"{TOPICS_DIR}/{topic_id}.jsonl",
    )


def header_meta(
    topic_id: str, header: dict[str, Any], *, clock: Callable[[], str] = now
) -> TopicMeta:
    """The metadata a topic's ``topic`` record (its header) gives.

    Args:
        topic_id: The topic.
        header: Its ``topic`` record.
        clock: Dates a header without a creation time (when it is read).
    """
    return new_meta(
        topic_id,
        name=str(header.get("name", topic_id)),
        brief=str(header.get("brief", "")),
        parent_id=optional_str(header.get("parent_id")),
        created_at=str(header.get("created_at") or clock()),
    )


def headless_meta(topic_id: str, stored_at: object, *, clock: Callable[[], str] = now) -> TopicMeta:
    """The metadata of a topic whose header is unreadable or missing, rebuilt from a record.

    Rebuilding it rather than dropping the topic keeps its messages.

    Args:
        topic_id: The topic.
        stored_at: When the record it is rebuilt from was stored.
        clock: Dates the topic when ``stored_at`` is empty too.
    """
    created_at = str(stored_at or clock())
    return new_meta(topic_id, name=topic_id, brief="", parent_id=None, created_at=created_at)


def apply_brief(meta: TopicMeta, record: dict[str, Any]) -> None:
    """Take a ``brief`` record into a topic's metadata (the last one wins)."""
    meta["name"] = str(record.get("name", meta["name"]))
    meta["brief"] = str(record.get("brief", meta["brief"]))
    meta["updated_at"] = str(record.get("updated_at", meta["updated_at"]))
    # A brief without a card (written before cards existed) leaves none.
    meta.pop("brief_card", None)
    if isinstance(record.get("card"), dict):
        meta["brief_card"] = record["card"]


def check_created_at(created_at: str | None) -> None:
    """Refuse a ``create_topic`` time that is not ISO-8601 (ValueError)."""
    if created_at is not None and parse_time(created_at) is None:
        raise ValueError(f"created_at is not an ISO-8601 time: {created_at!r}")


def check_new_messages(messages: Sequence[StoredMessage], locations: dict[str, str]) -> None:
    """Refuse messages an append cannot store (ValueError), before anything is written.

    Args:
        messages: The messages to append.
        locations: Every stored message id mapped to its topic id.
    """
    batch: set[str] = set()
    for message in messages:
        message_id = message.get("id")
        if not isinstance(message_id, str) or not message_id:
            raise ValueError(f"message without a string id: {message!r:.200}")
        if message_id in locations:
            raise ValueError(
                f"message {message_id!r} is already stored in {locations[message_id]!r}"
            )
        if message_id in batch:
            raise ValueError(f"message {message_id!r} appears twice in one append")
        reserved = RESERVED_KEYS.intersection(message)
        if reserved:
            raise ValueError(f"message {message_id!r} uses reserved keys {reserved}")
        batch.add(message_id)


def link_of(record: dict[str, Any]) -> tuple[str, str, str] | None:
    """A ``link`` record's ``(from, to, kind)``; None when one of them is not a string."""
    source, target, kind = record.get("from"), record.get("to"), record.get("kind")
    if not all(isinstance(value, str) for value in (source, target, kind)):
        return None
    return cast(str, source), cast(str, target), cast(str, kind)


@dataclass
class IndexedTopic:
    """What the index keeps per topic, whichever store holds it."""

    meta: TopicMeta
    seq: int
    """Sequence number of the topic's first record: ties creation times."""
    days: set[str] = field(default_factory=set)
    merged_into: str | None = None
    """The topic a review merged this one into (``merged_topics``): retired, its messages
    read as that topic's."""

    def count(self, message: StoredMessage, stored_at: str) -> None:
        """Count a message stored at ``stored_at`` in the metadata and the days."""
        self.meta["message_count"] += 1
        if stored_at:
            self.meta["updated_at"] = stored_at
        day = day_of(message.get("timestamp")) or day_of(stored_at)
        if day is not None:
            self.days.add(day)


def order_key(topic: IndexedTopic) -> tuple[datetime, int]:
    """Where a topic stands among the thread's topics: by creation time, then creation order."""
    return parse_time(topic.meta["created_at"]) or NEVER, topic.seq


TopicT = TypeVar("TopicT", bound=IndexedTopic)


class TopicRecordIndex(Generic[TopicT]):
    """The in-memory index of a thread's records, the reads answered from it, and the writes.

    A subclass sets the index up (:meth:`_clear_index`, then its records) and supplies the
    hooks below: where records are stored, how a topic's messages are held. Every method of
    the protocol holds ``_lock``, and memory changes only after a write succeeded, so that a
    failed write changes nothing.
    """

    _lock: threading.RLock
    _filter: SeqRanges | None
    """The ranges the store was opened with (None: every record)."""
    _ranges: SeqRanges
    """The sequence numbers the store answers from: its ranges plus what it wrote."""
    _topics: dict[str, TopicT]
    _locations: dict[str, str]
    """Every visible message id mapped to the topic holding it."""
    _links: list[tuple[str, str, str]]
    """``(from, to, kind)`` of every visible link, each once, oldest first."""
    _combined_cache: dict[str, tuple[list[StoredMessage], dict[str, int]]]
    """The messages of each topic that holds merged ones, in conversation order."""
    _shelf: ArchiveShelf
    """Where archived topics' summaries are filed (``archive_shelves``)."""

    def _clear_index(self) -> None:
        """Start an empty index answering from the ranges the store was opened with."""
        self._topics = {}
        self._locations = {}
        self._links = []
        self._combined_cache = {}
        self._ranges = list(self._filter or [])

    # ----------------------------------------------------------------------------- the hooks

    def _loaded(self, topic: TopicT) -> tuple[list[StoredMessage], dict[str, int]]:
        """A topic's messages in order, and each one's index among them."""
        raise NotImplementedError

    def _store(self, topic_id: str | None, records: list[dict[str, Any]]) -> int:
        """Store records of a topic (None: links), without their numbers, under fresh ones.

        Returns:
            The first record's sequence number.

        Raises:
            TypeError: A record holds something JSON cannot encode. Nothing is written then.
        """
        raise NotImplementedError

    def _store_topic(self, header: dict[str, Any], meta: TopicMeta) -> TopicT:
        """Store a new topic's header record; return the topic to index."""
        raise NotImplementedError

    def _topic_id_taken(self, topic_id: str) -> bool:
        """Whether a topic id is in use where this index does not see it (another branch)."""
        raise NotImplementedError

    def _add_message(self, topic: TopicT, message: StoredMessage, seq: int, stored_at: str) -> None:
        """Index a message just stored in ``topic`` (ids already checked, location set)."""
        raise NotImplementedError

    def _stored(self, topic: TopicT) -> None:
        """Follow up a write to ``topic`` once memory has taken it in (nothing by default)."""

    def _catch_up(self) -> None:
        """Take in what the store learnt since (called under the lock before every method)."""

    def _clock(self) -> str:
        """The time records are stamped with."""
        return now()

    def _topic(self, topic_id: str) -> TopicT:
        try:
            return self._topics[topic_id]
        except KeyError:
            raise KeyError(f"unknown topic {topic_id!r}") from None

    def _live(self, topic_id: str) -> TopicT:
        """A topic that was not merged into another (KeyError naming its target if it was)."""
        topic = self._topic(topic_id)
        if topic.merged_into is not None:
            target = live_topic(self._topics, topic_id)
            raise KeyError(f"topic {topic_id!r} was merged into {target!r}")
        return topic

    def _owner(self, topic_id: str) -> str:
        """The live topic that holds the messages stored in ``topic_id``'s own records."""
        return live_topic(self._topics, topic_id)

    def _holding(self, topic_id: str) -> tuple[list[StoredMessage], dict[str, int]]:
        """A live topic's messages, merged topics' included, and each one's index among them."""
        parts = members(self._topics, topic_id) if self._merges() else [topic_id]
        if len(parts) == 1:
            return self._loaded(self._topics[topic_id])
        cached = self._combined_cache.get(topic_id)
        if cached is None:
            loaded = [self._loaded(self._topics[part])[0] for part in parts]
            cached = combined(loaded, _message_time)
            self._combined_cache[topic_id] = cached
        return cached

    def _merges(self) -> bool:
        return any(topic.merged_into is not None for topic in self._topics.values())

    def _retire(self, source_id: str, into_id: str) -> None:
        """Take a stored merge into memory: the source's messages now belong to the target."""
        self._topics[source_id].merged_into = into_id
        owner = self._owner(into_id)
        for message_id, holder in list(self._locations.items()):
            if holder == source_id:
                self._locations[message_id] = owner
        self._combined_cache.clear()

    def _register_owners(self, topic_id: str, message_ids: Collection[str]) -> None:
        """Map a topic's message ids to it, unless an older topic holds one already.

        Called in topic order, so that should a message id ever sit in two topics, the older
        one keeps it, whatever order the records came in.
        """
        if self._locations.keys().isdisjoint(message_ids):
            self._locations.update(dict.fromkeys(message_ids, topic_id))
            return
        # The store's own logger, as when each store logged this itself.
        store_logger = logging.getLogger(type(self).__module__)
        for message_id in message_ids:
            owner = self._locations.setdefault(message_id, topic_id)
            if owner != topic_id:
                store_logger.warning(
                    "message %s is stored in both %s and %s; using %s",
                    message_id,
                    owner,
                    topic_id,
                    owner,
                )

    def _take_link(self, link: tuple[str, str, str]) -> None:
        if link not in self._links:
            self._links.append(link)

    # -------------------------------------------------------------------------- the protocol

    def visible_ranges(self) -> SeqRanges:
        """The sequence numbers this store answers from: what the checkpoint records."""
        with self._lock:
            return list(self._ranges)

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
        check_created_at(created_at)
        with self._lock:
            self._catch_up()
            if parent_id is not None:
                self._live(parent_id)
            created = created_at or self._clock()
            while True:
                topic_id = f"topic-{secrets.token_hex(4)}"
                if topic_id not in self._topics and not self._topic_id_taken(topic_id):
                    break
            header = {
                "type": "topic",
                "id": topic_id,
                "name": name,
                "brief": brief,
                "parent_id": parent_id,
                "created_at": created,
            }
            meta = new_meta(
                topic_id, name=name, brief=brief, parent_id=parent_id, created_at=created
            )
            self._topics[topic_id] = self._store_topic(header, meta)
            return meta.copy()

    def append(self, topic_id: str, messages: Sequence[StoredMessage]) -> None:
        """Append messages to a topic in one write.

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
            self._catch_up()
            topic = self._live(topic_id)
            if not messages:
                return
            check_new_messages(messages, self._locations)
            stored_at = self._clock()
            records = [{"type": "message", "stored_at": stored_at, **m} for m in messages]
            start = self._store(topic_id, records)
            for offset, message in enumerate(messages):
                copy = message.copy()
                self._locations[copy["id"]] = topic_id
                self._add_message(topic, copy, start + offset, stored_at)
            self._combined_cache.pop(topic_id, None)
            self._stored(topic)

    def set_brief(
        self, topic_id: str, name: str, brief: str, *, card: SummaryCard | None = None
    ) -> None:
        """Replace the topic's name and brief (a new record; the last brief wins).

        Args:
            topic_id: The topic.
            name: Its new name.
            brief: Its new brief.
            card: The brief as a structured card (seed 001 T3), kept on the same record.

        Raises:
            KeyError: Unknown topic.
        """
        with self._lock:
            self._catch_up()
            topic = self._live(topic_id)
            record: dict[str, Any] = {
                "type": "brief",
                "name": name,
                "brief": brief,
                "updated_at": self._clock(),
            }
            if card is not None:
                record["card"] = card
            self._store(topic_id, [record])
            apply_brief(topic.meta, record)
            self._stored(topic)

    def messages(self, topic_id: str) -> list[StoredMessage]:
        """All messages of a topic, in the order they were appended.

        The list is fresh; the messages are the store's cached records, shared by every
        reader and never to be mutated (copying a long topic's messages on every turn was
        the largest cost of a turn that grows with history).

        Raises:
            KeyError: Unknown topic.
        """
        with self._lock:
            self._catch_up()
            self._live(topic_id)
            return list(self._holding(topic_id)[0])

    def neighbours(self, message_id: str, before: int, after: int) -> list[StoredMessage]:
        """A stored message with up to ``before``/``after`` messages around it in its topic.

        Shared records, as :meth:`messages`; ``[]`` for an unknown id.
        """
        with self._lock:
            self._catch_up()
            topic_id = self._locations.get(message_id)
            if topic_id is None:
                return []
            messages, positions = self._holding(topic_id)
            place = positions.get(message_id)
            if place is None:
                return []
            return messages[max(0, place - before) : place + after + 1]

    def get_messages(self, message_ids: Sequence[str]) -> dict[str, StoredMessage]:
        """Look messages up by id across all topics; unknown ids are left out."""
        with self._lock:
            self._catch_up()
            found: dict[str, StoredMessage] = {}
            for message_id in message_ids:
                topic_id = self._locations.get(message_id)
                if topic_id is None or message_id in found:
                    continue
                messages, positions = self._holding(topic_id)
                place = positions.get(message_id)
                if place is not None:
                    found[message_id] = messages[place].copy()
            return found

    def locate(self, message_id: str) -> str | None:
        """Return the topic holding a message, or None."""
        with self._lock:
            self._catch_up()
            return self._locations.get(message_id)

    def message_ids(self) -> dict[str, str]:
        """Every stored message id mapped to its topic id."""
        with self._lock:
            self._catch_up()
            return dict(self._locations)

    def topic_ids(self) -> list[str]:
        """Ids of all topics, oldest first (by ``created_at``, then by creation order).

        Topics merged into another are left out: their messages are the other's.
        """
        with self._lock:
            self._catch_up()
            return [
                topic.meta["id"]
                for topic in sorted(self._topics.values(), key=order_key)
                if topic.merged_into is None
            ]

    def meta(self, topic_id: str) -> TopicMeta:
        """Return a copy of a topic's metadata.

        A topic holding merged ones counts their messages too.

        Raises:
            KeyError: Unknown topic, or one merged into another.
        """
        with self._lock:
            self._catch_up()
            meta = self._live(topic_id).meta.copy()
            for part in members(self._topics, topic_id)[1:] if self._merges() else []:
                other = self._topics[part].meta
                meta["message_count"] += other["message_count"]
                meta["updated_at"] = max(meta["updated_at"], other["updated_at"])
            return meta

    def merge_topics(self, source_id: str, into_id: str) -> None:
        """Retire ``source_id`` into ``into_id``: its messages become the target's (one record).

        Idempotent: merging a topic already merged into the same target writes nothing.

        Raises:
            KeyError: Either topic is unknown, or already merged into another one.
            ValueError: A topic merged into itself.
        """
        with self._lock:
            self._catch_up()
            if source_id == into_id:
                raise ValueError(f"cannot merge topic {source_id!r} into itself")
            known = self._topic(source_id)
            self._topic(into_id)
            if known.merged_into is not None and self._owner(source_id) == self._owner(into_id):
                return
            source = self._live(source_id)
            self._live(into_id)
            self._store(source_id, [merge_record(into_id, self._clock())])
            self._retire(source_id, into_id)
            self._stored(source)

    def merged_into(self, topic_id: str) -> str | None:
        """The live topic holding a merged topic's messages; None for a topic never merged.

        Raises:
            KeyError: Unknown topic.
        """
        with self._lock:
            self._catch_up()
            if self._topic(topic_id).merged_into is None:
                return None
            return self._owner(topic_id)

    def save_archive(self, entry: ArchivedTopic) -> None:
        """File an archived topic's compressed summary under its month.

        Raises:
            KeyError: Unknown topic, or one merged into another.
        """
        with self._lock:
            self._catch_up()
            self._live(entry["topic_id"])
            self._shelf.save(entry)

    def archive_entry(self, topic_id: str) -> ArchivedTopic | None:
        """The filed summary of a topic, or None (whether it is archived: see the registry)."""
        with self._lock:
            return self._shelf.get(topic_id)

    def archive_entries(self) -> list[ArchivedTopic]:
        """Every filed summary, month by month."""
        with self._lock:
            return self._shelf.entries()

    def drop_archive(self, topic_id: str) -> None:
        """Take a topic's filed summary off the shelf (a restored topic)."""
        with self._lock:
            self._shelf.drop(topic_id)

    def link(self, from_id: str, to_id: str, kind: str) -> None:
        """Record a relation between two topics; recording the same relation again is a no-op.

        Raises:
            KeyError: Either topic is unknown.
            ValueError: A topic linked to itself.
        """
        with self._lock:
            self._catch_up()
            self._live(from_id)
            self._live(to_id)
            if from_id == to_id:
                raise ValueError(f"cannot link topic {from_id!r} to itself")
            link = (from_id, to_id, kind)
            if link in self._links:
                return
            record = {
                "type": "link",
                "from": from_id,
                "to": to_id,
                "kind": kind,
                "created_at": self._clock(),
            }
            self._store(None, [record])
            self._links.append(link)

    def links(self, topic_id: str) -> list[tuple[str, str]]:
        """Relations of a topic as ``(other_id, kind)``, in either direction, oldest first.

        The direction of a ``subtopic`` relation can be read from ``meta(...)["parent_id"]``.
        """
        with self._lock:
            self._catch_up()
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
            merges = self._merges()
            for topic_id in self.topic_ids():
                parts = members(self._topics, topic_id) if merges else [topic_id]
                days = set().union(*(self._topics[part].days for part in parts))
                for day in days:
                    index.setdefault(day, []).append(topic_id)
            return {day: index[day] for day in sorted(index)}


def _message_time(message: StoredMessage) -> datetime:
    """A message's place in the conversation when topics are merged (undated ones last)."""
    return parse_time(message.get("timestamp")) or NEVER
