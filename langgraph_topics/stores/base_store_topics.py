"""Topic store on a LangGraph ``BaseStore``: the JSONL store's records, shared by processes.

With ``PostgresStore`` several worker processes on one database share a thread's topics; on the
LangGraph Server the graph keeps them in the platform store (``runtime.store``). The records and
what is answered from them are those of :class:`~langgraph_topics.stores.topic_store.
JsonlTopicStore`, item for line. Layout (namespaces are tuples of labels)::

    ("langgraph_topics", <thread key>)              key "head": {"seq": <high-water mark>}
    ("langgraph_topics", <thread key>, "records")   key "<seq, 12 digits>-<writer>": a record

A record item's value is ``{"seq", "order", "type", "topic", "record"}``: the sequence number
(and as zero-padded text, for range filters), the record's type (``topic``, ``message``,
``brief``, ``link``), the topic it belongs to (None for a link) and the JSONL line's record
without its ``seq``, as ASCII JSON text (Postgres ``jsonb`` refuses NUL characters and lone
surrogates, which messages may hold). Nothing is embedded: every item is put with
``index=False``, and never with a time to live.

Writing reserves sequence numbers first (the head goes up by as many as are written), then puts
the records in one ``batch`` call (``PostgresStore`` runs a batch in one pipeline or
transaction, and turns its puts into one ``INSERT``: they land together or not at all). A crash
in between leaves a gap, never a collision: a later writer numbers after the stored head. Keys
carry the writer's random token besides the number, so that even two writers racing for the
same numbers add records side by side instead of overwriting one; writers of one thread should
still take turns (a ``BaseStore`` has no compare-and-set for the head), as the LangGraph Server
has runs of one thread do.

A thread is read whole on open (one ``search``), and reads are answered from memory. ``head()``
reads the stored high-water mark: when it differs from ``known_head()``, another process wrote
the thread since this view was loaded. ``on_branch`` with the ranges of a checkpoint another
worker wrote reads only the records that worker added, when they continue this view's branch.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from hashlib import sha1
from typing import Any, cast

from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchOp

from langgraph_topics.state.records import StoredMessage, TopicMeta
from langgraph_topics.stores.seq_ranges import (
    SeqRanges,
    contains,
    normalize,
    with_range,
)
from langgraph_topics.stores.topic_store import (
    _RESERVED_KEYS,
    TOPICS_DIR,
    JsonlTopicStore,
    _day,
    _message_from_record,
    _now,
    _optional_str,
    _parse_time,
)
from langgraph_topics.summaries.card import SummaryCard

logger = logging.getLogger(__name__)

NAMESPACE_PREFIX = "langgraph_topics"
"""First label of every namespace this package writes in a ``BaseStore``."""
HEAD_KEY = "head"
RECORDS_LABEL = "records"
SEQ_DIGITS = 12
PAGE_SIZE = 500
"""How many more items than the head the ``search`` that loads a thread asks for."""
COPY_MARK = "copy"
"""Writer part of the keys of copied records (other writers' are hex tokens)."""
BATCH_SIZE = 1000
"""Records per ``batch`` call when records are restored (Postgres caps parameters at 65535)."""

_NEVER = datetime.max.replace(tzinfo=UTC)


def thread_key(thread_id: str) -> str:
    """The namespace label of a thread: readable, collision-free, without ``.``.

    The same as ``services.thread_directory_name`` (not imported: services imports the stores)
    except that ``.`` becomes ``_``, since ``BaseStore`` namespace labels cannot hold one.
    """
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", thread_id)[:48]
    digest = sha1(thread_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{safe}-{digest}"


def thread_namespace(thread_id: str) -> tuple[str, ...]:
    """The namespace holding a thread's head item (its records sit one label below)."""
    return (NAMESPACE_PREFIX, thread_key(thread_id))


def stored_head(store: BaseStore, thread_id: str) -> int:
    """A thread's high-water sequence number in ``store`` (0: none), in one read."""
    item = store.get(thread_namespace(thread_id), HEAD_KEY)
    value = item.value.get("seq") if item is not None else 0
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _record_key(seq: int, writer: str) -> str:
    return f"{_order_label(seq)}-{writer}"


def _order_label(seq: int) -> str:
    """A sequence number as text that sorts like the number (for ``search`` filters).

    ``PostgresStore`` compares ``$gte``/``$lt`` filter values as text, so the number itself
    would put 9 after 10.
    """
    return f"{seq:0{SEQ_DIGITS}d}"


def _item_value(
    seq: int, topic_id: str | None, record: dict[str, Any], text: str
) -> dict[str, Any]:
    """The value of a record item (see the module docstring)."""
    return {
        "seq": seq,
        "order": _order_label(seq),
        "type": record.get("type"),
        "topic": topic_id,
        "record": text,
    }


def _record_text(record: dict[str, Any]) -> str:
    """A record as the ASCII JSON text items carry (TypeError if JSON cannot encode it)."""
    return json.dumps(record, ensure_ascii=True)


@dataclass(frozen=True)
class StoredRecord:
    """One record item as read back from the store."""

    seq: int
    key: str
    topic: str | None
    record: dict[str, Any]
    """The JSONL record, ``seq`` included."""


def _parse_item(item: Item) -> StoredRecord | int | None:
    """A record item's content; its bare ``seq`` when the rest is unreadable; else None."""
    value = item.value
    seq = value.get("seq") if isinstance(value, dict) else None
    if not isinstance(seq, int) or isinstance(seq, bool):
        logger.warning("topic record %s has no sequence number; skipped", item.key)
        return None
    topic, text = value.get("topic"), value.get("record")
    try:
        record = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        record = None
    if not isinstance(record, dict) or not (topic is None or isinstance(topic, str)):
        logger.warning("topic record %s is unreadable; skipped", item.key)
        return seq
    record["seq"] = seq
    return StoredRecord(seq, item.key, topic, record)


@dataclass
class _Topic:
    """What the view keeps per topic: everything (a store round trip costs more than memory)."""

    meta: TopicMeta
    seq: int
    """Sequence number of the topic's first record: ties creation times."""
    days: set[str] = field(default_factory=set)
    messages: list[StoredMessage] = field(default_factory=list)
    positions: dict[str, int] = field(default_factory=dict)
    order: dict[str, tuple[datetime, int]] = field(default_factory=dict)
    """Each message's place in the conversation: its time, then its sequence number."""


@dataclass
class _Unsettled:
    """A write whose ``batch`` call failed: some, all or none of it may be stored."""

    items: list[tuple[str, dict[str, Any]]]
    """The keys and values it tried to put."""


class BaseStoreTopicStore:
    """Topic store on a LangGraph ``BaseStore`` (see the module docstring for the layout).

    Implements ``TopicStore`` and ``BranchedTopicStore`` with :class:`JsonlTopicStore`'s
    semantics. Thread-safe within a process; across processes, writers of one thread must take
    turns (the thread's writer lock), readers re-open when :meth:`head` moves.

    Args:
        store: Any ``BaseStore`` (``InMemoryStore``, ``PostgresStore``, the platform store).
        thread_id: The conversation thread whose topics this is.
        visible: The sequence-number ranges this store answers from (a branch's records);
            ``None`` for every stored record.
    """

    def __init__(
        self, store: BaseStore, thread_id: str, *, visible: SeqRanges | None = None
    ) -> None:
        self.store = store
        self.thread_id = thread_id
        self._filter = normalize(visible) if visible is not None else None
        self._head_namespace = thread_namespace(thread_id)
        self._records_namespace = (*self._head_namespace, RECORDS_LABEL)
        self._writer = secrets.token_hex(4)
        self._lock = threading.RLock()
        self._unsettled: list[_Unsettled] = []
        self._load()

    # ------------------------------------------------------------------------------- branches

    def visible_ranges(self) -> SeqRanges:
        """The sequence numbers this store answers from: what the checkpoint records."""
        with self._lock:
            return list(self._ranges)

    def on_branch(self, ranges: SeqRanges) -> BaseStoreTopicStore:
        """The same thread as the branch whose checkpoint recorded ``ranges`` sees it.

        When ``ranges`` continue this view's branch (they hold all of it, and what they add
        was numbered after it: another worker took the branch's last turns), the new view is
        this one plus only the added records, read by number; otherwise the thread is read
        again whole.
        """
        wanted = normalize(ranges)
        with self._lock:
            added = _added_ranges(self._ranges, wanted) if self._filter is not None else None
            if added is not None and not self._unsettled:
                continued = self._continued(wanted, added)
                if continued is not None:
                    return continued
        return BaseStoreTopicStore(self.store, self.thread_id, visible=wanted)

    def _continued(self, ranges: SeqRanges, added: SeqRanges) -> BaseStoreTopicStore | None:
        """The view plus the records of ``added``; None when they do not simply follow it."""
        head = self.head()
        ops = [
            SearchOp(
                self._records_namespace,
                filter={"order": {"$gte": _order_label(start), "$lt": _order_label(end)}},
                limit=end - start + PAGE_SIZE,
            )
            for start, end in added
        ]
        results = self.store.batch(ops) if ops else []
        fresh: dict[str, StoredRecord] = {}
        for (start, end), found in zip(added, results, strict=True):
            items = cast(list[Item], found)
            if len(items) >= end - start + PAGE_SIZE:
                return None  # more records than numbers: let a full read sort them out
            for item in items:
                parsed = _parse_item(item)
                if isinstance(parsed, StoredRecord) and start <= parsed.seq < end:
                    fresh[item.key] = parsed
        records = sorted(fresh.values(), key=lambda record: (record.seq, record.key))
        view = self._copy(ranges)
        view._known_head = head
        view._next_seq = max(head, self._next_seq, *(r.seq + 1 for r in records))
        for record in records:
            kind, topic_id = record.record.get("type"), record.topic
            if kind == "topic" and topic_id is not None:
                view._all_topic_ids.add(topic_id)
            elif kind != "link" and topic_id not in view._topics:
                return None  # a topic this branch never saw created: read it all again
            view._index(record)
            message_id = record.record.get("id")
            if kind == "message" and isinstance(message_id, str) and topic_id is not None:
                owner = view._locations.setdefault(message_id, topic_id)
                if owner != topic_id:
                    return None  # an id in two topics: the full read says which keeps it
        return view

    def _copy(self, ranges: SeqRanges) -> BaseStoreTopicStore:
        """A view of the same thread with this one's records, answering from ``ranges``."""
        view = object.__new__(BaseStoreTopicStore)
        view.store, view.thread_id = self.store, self.thread_id
        view._filter, view._ranges = list(ranges), list(ranges)
        view._head_namespace, view._records_namespace = (
            self._head_namespace,
            self._records_namespace,
        )
        view._writer = secrets.token_hex(4)
        view._lock = threading.RLock()
        view._unsettled = []
        view._topics = {
            topic_id: replace(
                topic,
                meta=topic.meta.copy(),
                days=set(topic.days),
                messages=list(topic.messages),
                positions=dict(topic.positions),
                order=dict(topic.order),
            )
            for topic_id, topic in self._topics.items()
        }
        view._locations = dict(self._locations)
        view._links = list(self._links)
        view._all_topic_ids = set(self._all_topic_ids)
        view._known_head, view._next_seq = self._known_head, self._next_seq
        return view

    def head(self) -> int:
        """The thread's high-water sequence number as stored now (one read).

        Another process wrote the thread since this view was loaded when it differs from
        :meth:`known_head`.
        """
        return stored_head(self.store, self.thread_id)

    def known_head(self) -> int:
        """The high-water mark as this view last read or wrote it."""
        with self._lock:
            return self._known_head

    def _visible_seq(self, seq: int) -> bool:
        """Whether a record belongs to this store's branch.

        Records numbered below 0 were copied from JSONL lines that predate sequence numbers;
        like those lines, every branch sees them.
        """
        return self._filter is None or seq < 0 or contains(self._ranges, seq)

    # -------------------------------------------------------------------------------- loading

    def _load(self) -> None:
        """Read every record of the thread and index what this branch sees."""
        self._topics: dict[str, _Topic] = {}
        self._locations: dict[str, str] = {}
        self._links: list[tuple[str, str, str]] = []
        self._ranges: SeqRanges = list(self._filter or [])
        self._known_head = self.head()
        records, highest = self._read_records()
        self._next_seq = max(self._known_head, highest + 1, 0)
        self._all_topic_ids: set[str] = {
            record.topic
            for record in records
            if record.topic is not None and record.record.get("type") == "topic"
        }
        for record in records:
            self._index(record)
        # Register ids in topic order so that, should a message id ever sit in two topics, the
        # older topic keeps it (as the JSONL store does).
        for topic in sorted(self._topics.values(), key=_order_key):
            for message in topic.messages:
                owner = self._locations.setdefault(message["id"], topic.meta["id"])
                if owner != topic.meta["id"]:
                    logger.warning(
                        "message %s is stored in both %s and %s; using %s",
                        message["id"],
                        owner,
                        topic.meta["id"],
                        owner,
                    )
        if self._filter is None:
            self._ranges = normalize([(0, self._next_seq)])

    def stored_records(self) -> list[StoredRecord]:
        """Every readable record of the thread, every branch's, in sequence order."""
        return self._read_records()[0]

    def _read_records(self) -> tuple[list[StoredRecord], int]:
        """Every readable record in sequence order, and the highest number seen (-1: none).

        One ``search`` call with a limit above the number of records, so that the answer is one
        snapshot: ``PostgresStore`` lists items newest first by ``updated_at``, which the
        records of one batch share, so pages fetched by offset could skip some. A full answer
        means more records than expected (another writer, or records numbered below 0): the
        search is repeated with twice the limit.
        """
        limit = max(self._known_head, 0) + PAGE_SIZE
        while True:
            found = self.store.search(self._records_namespace, limit=limit)
            if len(found) < limit:
                break
            limit *= 2
        by_key: dict[str, StoredRecord] = {}
        highest = -1
        for item in found:
            if item.namespace != self._records_namespace or item.key in by_key:
                continue
            parsed = _parse_item(item)
            if parsed is None:
                continue
            highest = max(highest, parsed if isinstance(parsed, int) else parsed.seq)
            if isinstance(parsed, StoredRecord):
                by_key[item.key] = parsed
        return sorted(by_key.values(), key=lambda record: (record.seq, record.key)), highest

    def _index(self, stored: StoredRecord) -> None:
        """Index one record (the one place that says what a record means)."""
        if not self._visible_seq(stored.seq):
            return
        record, kind = stored.record, stored.record.get("type")
        if kind == "link":
            self._index_link(stored)
            return
        topic_id = stored.topic
        if topic_id is None:
            logger.warning("topic record %s names no topic; skipped", stored.key)
            return
        topic = self._topics.get(topic_id)
        if kind == "topic":
            if topic is None:
                if record.get("id") != topic_id:
                    logger.warning("topic %s: header names topic %r", topic_id, record.get("id"))
                self._topics[topic_id] = _Topic(
                    meta=_new_meta(
                        topic_id,
                        name=str(record.get("name", topic_id)),
                        brief=str(record.get("brief", "")),
                        parent_id=_optional_str(record.get("parent_id")),
                        created_at=str(record.get("created_at") or _now()),
                    ),
                    seq=stored.seq,
                )
            return
        if topic is None:
            if topic_id in self._all_topic_ids:
                return  # its header belongs to another branch: so does the topic
            logger.warning("topic %s: no header record; rebuilding metadata", topic_id)
            created_at = str(record.get("stored_at") or _now())
            topic = self._topics[topic_id] = _Topic(
                meta=_new_meta(
                    topic_id, name=topic_id, brief="", parent_id=None, created_at=created_at
                ),
                seq=stored.seq,
            )
        if kind == "brief":
            _apply_brief(topic.meta, record)
        elif kind == "message":
            message = _message_from_record(record)
            if message is None:
                logger.warning("topic %s: skipping malformed message record", topic_id)
            elif message["id"] in topic.positions:
                logger.warning("topic %s: duplicate message id %s ignored", topic_id, message["id"])
            else:
                _add_message(topic, message, stored.seq, str(record.get("stored_at", "")))
        else:
            logger.warning("topic %s: skipping record of unknown type %r", topic_id, kind)

    def _index_link(self, stored: StoredRecord) -> None:
        record = stored.record
        source, target, kind = record.get("from"), record.get("to"), record.get("kind")
        if not all(isinstance(value, str) for value in (source, target, kind)):
            logger.warning("link record %s is malformed; skipped", stored.key)
            return
        link = (cast(str, source), cast(str, target), cast(str, kind))
        if link not in self._links:
            self._links.append(link)

    # -------------------------------------------------------------------------------- writing

    def _reserve(self, count: int) -> int:
        """Take ``count`` sequence numbers: the stored head goes up before anything is written.

        The view's own counter moves first, so that even a failed head write is never reused.
        """
        start = max(self.head(), self._next_seq)
        self._next_seq = start + count
        self.store.batch(
            [PutOp(self._head_namespace, HEAD_KEY, {"seq": self._next_seq}, index=False)]
        )
        self._known_head = self._next_seq
        return start

    def _write(self, entries: Sequence[tuple[str | None, dict[str, Any]]]) -> int:
        """Store records ``(topic id, record without seq)`` under fresh numbers, in one batch.

        Returns:
            The first record's sequence number.

        Raises:
            TypeError: A record holds something JSON cannot encode. Nothing is written then.
        """
        texts = [_record_text(record) for _, record in entries]
        start = self._reserve(len(entries))
        items = [
            (
                _record_key(start + offset, self._writer),
                _item_value(start + offset, topic_id, record, text),
            )
            for offset, ((topic_id, record), text) in enumerate(zip(entries, texts, strict=True))
        ]
        try:
            self.store.batch(
                [PutOp(self._records_namespace, key, value, index=False) for key, value in items]
            )
        except BaseException:
            self._unsettled.append(_Unsettled(items))
            raise
        self._ranges = with_range(self._ranges, start, start + len(entries))
        return start

    def _settle(self) -> None:
        """Take in what failed writes stored after all, when this view sees every record.

        A branch's view (opened with ``visible``) never sees a failed write, as the JSONL store
        never does: the write's numbers are not in its ranges, so a retry stores the messages
        once. A view of every record learns which of them did land (a ``batch`` may fail after
        storing them, or halfway on a store without transactions) and indexes those.
        """
        if not self._unsettled:
            return
        if self._filter is not None:
            self._unsettled.clear()
            return
        for failed in list(self._unsettled):
            keys = [key for key, _ in failed.items]
            found = self.store.batch([GetOp(self._records_namespace, key) for key in keys])
            self._unsettled.remove(failed)
            for item in found:
                parsed = _parse_item(item) if isinstance(item, Item) else None
                if isinstance(parsed, StoredRecord):
                    self._index(parsed)
                    self._ranges = with_range(self._ranges, parsed.seq, parsed.seq + 1)
                    self._register_landed(parsed)

    def _register_landed(self, stored: StoredRecord) -> None:
        if stored.record.get("type") == "topic" and stored.topic is not None:
            self._all_topic_ids.add(stored.topic)
        topic = self._topics.get(stored.topic or "")
        message_id = stored.record.get("id")
        if topic is not None and stored.record.get("type") == "message" and message_id:
            self._locations.setdefault(str(message_id), topic.meta["id"])

    # ---------------------------------------------------------------------------- the protocol

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
            self._settle()
            if parent_id is not None:
                self._topic(parent_id)
            created = created_at or _now()
            while True:
                topic_id = f"topic-{secrets.token_hex(4)}"
                if topic_id not in self._topics and topic_id not in self._all_topic_ids:
                    break
            record = {
                "type": "topic",
                "id": topic_id,
                "name": name,
                "brief": brief,
                "parent_id": parent_id,
                "created_at": created,
            }
            seq = self._write([(topic_id, record)])
            self._all_topic_ids.add(topic_id)
            meta = _new_meta(
                topic_id, name=name, brief=brief, parent_id=parent_id, created_at=created
            )
            self._topics[topic_id] = _Topic(meta=meta, seq=seq)
            return meta.copy()

    def append(self, topic_id: str, messages: Sequence[StoredMessage]) -> None:
        """Append messages to a topic in one batch.

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
            self._settle()
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
            start = self._write(
                [(topic_id, {"type": "message", "stored_at": stored_at, **m}) for m in messages]
            )
            # Memory changes only after the write succeeded, so a failed write changes nothing.
            for offset, message in enumerate(messages):
                copy = message.copy()
                self._locations[copy["id"]] = topic_id
                _add_message(topic, copy, start + offset, stored_at)

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
            self._settle()
            topic = self._topic(topic_id)
            record: dict[str, Any] = {
                "type": "brief",
                "name": name,
                "brief": brief,
                "updated_at": _now(),
            }
            if card is not None:
                record["card"] = card
            self._write([(topic_id, record)])
            _apply_brief(topic.meta, record)

    def messages(self, topic_id: str) -> list[StoredMessage]:
        """All messages of a topic, in the order they were appended.

        The list is fresh; the messages are shared records, never to be mutated.

        Raises:
            KeyError: Unknown topic.
        """
        with self._lock:
            self._settle()
            return list(self._topic(topic_id).messages)

    def neighbours(self, message_id: str, before: int, after: int) -> list[StoredMessage]:
        """A stored message with up to ``before``/``after`` messages around it in its topic.

        Shared records, as :meth:`messages`; ``[]`` for an unknown id.
        """
        with self._lock:
            self._settle()
            topic_id = self._locations.get(message_id)
            if topic_id is None:
                return []
            topic = self._topics[topic_id]
            place = topic.positions[message_id]
            return topic.messages[max(0, place - before) : place + after + 1]

    def get_messages(self, message_ids: Sequence[str]) -> dict[str, StoredMessage]:
        """Look messages up by id across all topics; unknown ids are left out."""
        with self._lock:
            self._settle()
            found: dict[str, StoredMessage] = {}
            for message_id in message_ids:
                topic_id = self._locations.get(message_id)
                if topic_id is None or message_id in found:
                    continue
                topic = self._topics[topic_id]
                found[message_id] = topic.messages[topic.positions[message_id]].copy()
            return found

    def locate(self, message_id: str) -> str | None:
        """Return the topic holding a message, or None."""
        with self._lock:
            self._settle()
            return self._locations.get(message_id)

    def message_ids(self) -> dict[str, str]:
        """Every stored message id mapped to its topic id."""
        with self._lock:
            self._settle()
            return dict(self._locations)

    def topic_ids(self) -> list[str]:
        """Ids of all topics, oldest first (by ``created_at``, then by creation order)."""
        with self._lock:
            self._settle()
            return [topic.meta["id"] for topic in sorted(self._topics.values(), key=_order_key)]

    def meta(self, topic_id: str) -> TopicMeta:
        """Return a copy of a topic's metadata.

        Raises:
            KeyError: Unknown topic.
        """
        with self._lock:
            self._settle()
            return self._topic(topic_id).meta.copy()

    def link(self, from_id: str, to_id: str, kind: str) -> None:
        """Record a relation between two topics; recording the same relation again is a no-op.

        Raises:
            KeyError: Either topic is unknown.
            ValueError: A topic linked to itself.
        """
        with self._lock:
            self._settle()
            self._topic(from_id)
            self._topic(to_id)
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
                "created_at": _now(),
            }
            self._write([(None, record)])
            self._links.append(link)

    def links(self, topic_id: str) -> list[tuple[str, str]]:
        """Relations of a topic as ``(other_id, kind)``, in either direction, oldest first."""
        with self._lock:
            self._settle()
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

    def transcript(self) -> list[StoredMessage]:
        """Every stored message across topics, ordered by time, then by storing order.

        A message's time is its ``timestamp`` or, without a readable one, when it was stored.
        """
        with self._lock:
            self._settle()
            keyed: list[tuple[datetime, int, StoredMessage]] = []
            for topic_id, topic in self._topics.items():
                for message in topic.messages:
                    if self._locations.get(message["id"]) == topic_id:
                        keyed.append((*topic.order[message["id"]], message))
            keyed.sort(key=lambda item: (item[0], item[1]))
            return [message for _, _, message in keyed]

    # -------------------------------------------------------------------------------- copying

    def restore_records(self, records: Iterable[tuple[str | None, dict[str, Any]]]) -> int:
        """Store records that already carry their sequence numbers, as a copy keeps them.

        For migrating a thread (:func:`copy_jsonl_topics`): the numbers stay, so the
        ranges its checkpoints name keep naming the same records. Records already stored with
        the same number, topic and content are skipped, so a copy cut short can be re-run.
        Records without a number (JSONL lines older than numbers) get negative ones in the
        order given, which every branch sees, as every branch saw them before. The head goes
        up first, then the records go in batches of :data:`BATCH_SIZE`; the view is reloaded.

        Args:
            records: ``(topic id or None for a link, record)`` pairs, each topic's in order.

        Returns:
            How many records were written.

        Raises:
            ValueError: A number is already stored holding another record: the thread is not
                a copy of these records. Nothing is written then.
            TypeError: A record holds something JSON cannot encode. Nothing is written then.
        """
        with self._lock:
            self._settle()
            given = list(records)
            unnumbered = sum(1 for _, record in given if _seq_of(record) is None)
            existing: dict[int, list[StoredRecord]] = {}
            for stored in self.stored_records():
                existing.setdefault(stored.seq, []).append(stored)
            wanted: list[tuple[str, dict[str, Any]]] = []
            occurrences: dict[int, int] = {}
            legacy = -unnumbered
            for topic_id, record in given:
                seq = _seq_of(record)
                if seq is None:
                    seq, legacy = legacy, legacy + 1
                body = {key: value for key, value in record.items() if key != "seq"}
                occurrence = occurrences[seq] = occurrences.get(seq, -1) + 1
                held = existing.get(seq, [])
                if any(s.topic == topic_id and _same(s.record, body) for s in held):
                    continue
                if any(COPY_MARK not in s.key for s in held):
                    raise ValueError(
                        f"thread {self.thread_id!r} already holds another record numbered {seq}"
                    )
                value = _item_value(seq, topic_id, body, _record_text(body))
                wanted.append((_record_key(seq, f"{COPY_MARK}{occurrence}"), value))
            if not wanted:
                return 0
            highest = max(cast(int, value["seq"]) for _, value in wanted)
            if self.head() <= highest:
                self.store.batch(
                    [PutOp(self._head_namespace, HEAD_KEY, {"seq": highest + 1}, index=False)]
                )
            for first in range(0, len(wanted), BATCH_SIZE):
                self.store.batch(
                    [
                        PutOp(self._records_namespace, key, value, index=False)
                        for key, value in wanted[first : first + BATCH_SIZE]
                    ]
                )
            self._load()
            return len(wanted)

    def _topic(self, topic_id: str) -> _Topic:
        try:
            return self._topics[topic_id]
        except KeyError:
            raise KeyError(f"unknown topic {topic_id!r}") from None


def copy_jsonl_topics(source: JsonlTopicStore, target: BaseStoreTopicStore) -> int:
    """Copy every record of a JSONL topic store, every branch's, into a ``BaseStore`` thread.

    Sequence numbers, topic ids and message ids stay as they are, so every checkpoint of the
    thread (they name ranges of sequence numbers) stays valid against the copy. Idempotent:
    records already copied are skipped, so a copy cut short is finished by running it again.
    ``target`` is reloaded afterwards.

    Returns:
        How many records were written (0 when the copy was already complete).

    Raises:
        ValueError: The target thread holds records of its own under the same numbers.
    """
    return target.restore_records(source.raw_records())


def _added_ranges(old: SeqRanges, new: SeqRanges) -> SeqRanges | None:
    """What ``new`` adds to ``old``, when it holds all of ``old`` and adds only after it."""
    top = old[-1][1] if old else 0
    below = normalize([(start, min(end, top)) for start, end in new if start < top])
    if below != old:
        return None
    return normalize([(max(start, top), end) for start, end in new if end > top])


def _seq_of(record: dict[str, Any]) -> int | None:
    seq = record.get("seq")
    return seq if isinstance(seq, int) and not isinstance(seq, bool) and seq >= 0 else None


def _same(stored: dict[str, Any], body: dict[str, Any]) -> bool:
    """Whether a stored record (``seq`` included) is ``body`` as JSON text carries it."""
    carried: object = json.loads(_record_text(body))
    return {k: v for k, v in stored.items() if k != "seq"} == carried


def _new_meta(
    topic_id: str, *, name: str, brief: str, parent_id: str | None, created_at: str
) -> TopicMeta:
    return TopicMeta(
        id=topic_id,
        name=name,
        brief=brief,
        parent_id=parent_id,
        created_at=created_at,
        updated_at=created_at,
        message_count=0,
        # Where the JSONL store would keep it: the same metadata whichever store holds it.
        file=f"{TOPICS_DIR}/{topic_id}.jsonl",
    )


def _apply_brief(meta: TopicMeta, record: dict[str, Any]) -> None:
    meta["name"] = str(record.get("name", meta["name"]))
    meta["brief"] = str(record.get("brief", meta["brief"]))
    meta["updated_at"] = str(record.get("updated_at", meta["updated_at"]))
    # A brief without a card (written before cards existed) leaves none.
    meta.pop("brief_card", None)
    if isinstance(record.get("card"), dict):
        meta["brief_card"] = record["card"]


def _add_message(topic: _Topic, message: StoredMessage, seq: int, stored_at: str) -> None:
    """Add a message to a topic's view (ids already checked)."""
    topic.positions[message["id"]] = len(topic.messages)
    topic.messages.append(message)
    topic.meta["message_count"] += 1
    if stored_at:
        topic.meta["updated_at"] = stored_at
    day = _day(message.get("timestamp")) or _day(stored_at)
    if day is not None:
        topic.days.add(day)
    when = _parse_time(message.get("timestamp")) or _parse_time(stored_at) or _NEVER
    topic.order[message["id"]] = (when, max(seq, 0))


def _order_key(topic: _Topic) -> tuple[datetime, int]:
    return _parse_time(topic.meta["created_at"]) or _NEVER, topic.seq
