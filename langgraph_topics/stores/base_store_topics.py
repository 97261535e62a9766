"""Topic store on a LangGraph ``BaseStore``: the JSONL store's records, shared by processes.

With ``PostgresStore`` several worker processes on one database share a thread's topics; on the
LangGraph Server the graph keeps them in the platform store (``runtime.store``). The records and
what is answered from them are those of :class:`~langgraph_topics.stores.topic_store.
JsonlTopicStore`, item for line. Layout (namespaces are tuples of labels)::

    ("langgraph_topics", <thread key>)              key "head": {"seq": <high-water mark>}
    ("langgraph_topics", <thread key>, "records")   key "<seq, 12 digits>-<writer>": a record
    ("langgraph_topics", <thread key>, "archived")  key "<topic id>": an archived summary

A record item's value is ``{"seq", "order", "type", "topic", "record"}``: the sequence number
(and as zero-padded text, for range filters), the record's type (``topic``, ``message``,
``brief``, ``link``, ``merged``, ``subtopics``), the topic it belongs to (None for a link) and
the JSONL line's record without its ``seq``, as ASCII JSON text (Postgres ``jsonb`` refuses
NUL characters and lone surrogates, which messages may hold). Nothing is embedded: every item
is put with ``index=False``, and never with a time to live.

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
import secrets
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, cast

from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchOp

from langgraph_topics.state.records import StoredMessage, TopicMeta
from langgraph_topics.stores.archive_shelves import BaseStoreArchiveShelf
from langgraph_topics.stores.merged_topics import MERGED, merged_target
from langgraph_topics.stores.seq_ranges import (
    SeqRanges,
    contains,
    normalize,
    with_range,
)
from langgraph_topics.stores.subtopics import SUBTOPICS, made_by_split
from langgraph_topics.stores.topic_records import (
    NEVER,
    IndexedTopic,
    TopicRecordIndex,
    apply_brief,
    header_meta,
    headless_meta,
    link_of,
    message_from_record,
    order_key,
    parse_time,
)
from langgraph_topics.stores.topic_store import JsonlTopicStore
from langgraph_topics.thread_ids import thread_key as thread_key  # re-export

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
class _Topic(IndexedTopic):
    """What the view keeps per topic: everything (a store round trip costs more than memory)."""

    messages: list[StoredMessage] = field(default_factory=list)
    positions: dict[str, int] = field(default_factory=dict)
    order: dict[str, tuple[datetime, int]] = field(default_factory=dict)
    """Each message's place in the conversation: its time, then its sequence number."""


@dataclass
class _Unsettled:
    """A write whose ``batch`` call failed: some, all or none of it may be stored."""

    items: list[tuple[str, dict[str, Any]]]
    """The keys and values it tried to put."""


class BaseStoreTopicStore(TopicRecordIndex[_Topic]):
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
        self._shelf = BaseStoreArchiveShelf(store, self._head_namespace)
        self._load()

    # ------------------------------------------------------------------------------- branches

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
            elif kind in (MERGED, SUBTOPICS):
                return None  # ids change topics: the full read places them
            elif kind == "topic" and made_by_split(record.record):
                return None  # a subtopic: the full read tells a split cut short
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
        view._shelf = self._shelf
        view._topics = {
            topic_id: replace(
                topic,
                meta=topic.meta.copy(),
                days=set(topic.days),
                messages=list(topic.messages),
                positions=dict(topic.positions),
                order=dict(topic.order),
                children=list(topic.children),
                handed=dict(topic.handed),
                inherited_days=set(topic.inherited_days),
            )
            for topic_id, topic in self._topics.items()
        }
        view._locations = dict(self._locations)
        view._links = list(self._links)
        view._combined_cache = {}
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
        self._clear_index()
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
        for topic in sorted(self._topics.values(), key=order_key):
            # A merged topic's ids go to the topic it was merged into.
            self._register_owners(self._owner(topic.meta["id"]), topic.positions)
        self._settle_splits()  # and a split topic's to its children
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
                    meta=header_meta(topic_id, record),
                    seq=stored.seq,
                    from_split=made_by_split(record),
                )
            return
        if topic is None:
            if topic_id in self._all_topic_ids:
                return  # its header belongs to another branch: so does the topic
            logger.warning("topic %s: no header record; rebuilding metadata", topic_id)
            meta = headless_meta(topic_id, record.get("stored_at"))
            topic = self._topics[topic_id] = _Topic(meta=meta, seq=stored.seq)
        if kind == "brief":
            apply_brief(topic.meta, record)
        elif kind == MERGED:
            topic.merged_into = merged_target(record)
            self._merges_changed()
            if topic.merged_into is None:
                logger.warning("topic %s: skipping a merge record naming no topic", topic_id)
        elif kind == SUBTOPICS:
            if not topic.take_split(record, stored.seq):
                logger.warning("topic %s: skipping an unreadable or second split", topic_id)
        elif kind == "message":
            message = message_from_record(record)
            if message is None:
                logger.warning("topic %s: skipping malformed message record", topic_id)
            elif message["id"] in topic.positions:
                logger.warning("topic %s: duplicate message id %s ignored", topic_id, message["id"])
            else:
                _index_message(topic, message, stored.seq, str(record.get("stored_at", "")))
        else:
            logger.warning("topic %s: skipping record of unknown type %r", topic_id, kind)

    def _index_link(self, stored: StoredRecord) -> None:
        link = link_of(stored.record)
        if link is None:
            logger.warning("link record %s is malformed; skipped", stored.key)
            return
        self._take_link(link)

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

    def _store(self, topic_id: str | None, records: list[dict[str, Any]]) -> int:
        """Put the records in one batch (see :meth:`TopicRecordIndex._store`)."""
        texts = [_record_text(record) for record in records]
        start = self._reserve(len(records))
        items = [
            (
                _record_key(start + offset, self._writer),
                _item_value(start + offset, topic_id, record, text),
            )
            for offset, (record, text) in enumerate(zip(records, texts, strict=True))
        ]
        try:
            self.store.batch(
                [PutOp(self._records_namespace, key, value, index=False) for key, value in items]
            )
        except BaseException:
            self._unsettled.append(_Unsettled(items))
            raise
        self._ranges = with_range(self._ranges, start, start + len(records))
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
        split = False
        for failed in list(self._unsettled):
            keys = [key for key, _ in failed.items]
            found = self.store.batch([GetOp(self._records_namespace, key) for key in keys])
            self._unsettled.remove(failed)
            for item in found:
                parsed = _parse_item(item) if isinstance(item, Item) else None
                if isinstance(parsed, StoredRecord):
                    split = split or parsed.record.get("type") == SUBTOPICS
                    self._index(parsed)
                    self._ranges = with_range(self._ranges, parsed.seq, parsed.seq + 1)
                    self._register_landed(parsed)
        if split:
            # A split whose record landed after all: its children left memory when the write
            # failed, so the whole thread is read again (as rare as such a failure).
            self._load()

    def _register_landed(self, stored: StoredRecord) -> None:
        if stored.record.get("type") == "topic" and stored.topic is not None:
            self._all_topic_ids.add(stored.topic)
        topic = self._topics.get(stored.topic or "")
        message_id = stored.record.get("id")
        if topic is not None and stored.record.get("type") == "message" and message_id:
            self._locations.setdefault(str(message_id), self._owner(topic.meta["id"]))
        if topic is not None and topic.merged_into is not None:
            self._retire(topic.meta["id"], topic.merged_into)

    # ------------------------------------------------------- the protocol (see TopicRecordIndex)

    def _topic_id_taken(self, topic_id: str) -> bool:
        return topic_id in self._all_topic_ids

    def _store_topic(self, header: dict[str, Any], meta: TopicMeta) -> _Topic:
        seq = self._store(meta["id"], [header])
        self._all_topic_ids.add(meta["id"])
        return _Topic(meta=meta, seq=seq)

    def _add_message(self, topic: _Topic, message: StoredMessage, seq: int, stored_at: str) -> None:
        _index_message(topic, message, seq, stored_at)

    def _loaded(self, topic: _Topic) -> tuple[list[StoredMessage], dict[str, int]]:
        return topic.messages, topic.positions

    def _catch_up(self) -> None:
        self._settle()

    def transcript(self) -> list[StoredMessage]:
        """Every stored message across topics, ordered by time, then by storing order.

        A message's time is its ``timestamp`` or, without a readable one, when it was stored.
        """
        with self._lock:
            self._settle()
            keyed: list[tuple[datetime, int, StoredMessage]] = []
            for topic_id, topic in self._topics.items():
                for message in topic.messages:
                    # Only the copy the index placed: a split placed it in a child.
                    if self._locations.get(message["id"]) == self._holder(topic_id, message["id"]):
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


def copy_jsonl_topics(source: JsonlTopicStore, target: BaseStoreTopicStore) -> int:
    """Copy every record of a JSONL topic store, every branch's, into a ``BaseStore`` thread.

    Sequence numbers, topic ids and message ids stay as they are, so every checkpoint of the
    thread (they name ranges of sequence numbers) stays valid against the copy. Idempotent:
    records already copied are skipped, so a copy cut short is finished by running it again.
    ``target`` is reloaded afterwards.

    Returns:
        How many records were written (0 when the copy was already complete).

    The archive shelf's filed summaries (``archive_shelves``) are copied too; they are not
    counted.

    Raises:
        ValueError: The target thread holds records of its own under the same numbers.
    """
    written = target.restore_records(source.raw_records())
    for entry in source.archive_entries():
        if target.archive_entry(entry["topic_id"]) == entry:
            continue
        try:
            target.save_archive(entry)
        except KeyError:  # a filing left for a topic since merged away: nobody reads it
            logger.info("archived summary of %s not copied: no such topic", entry["topic_id"])
    return written


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


def _index_message(topic: _Topic, message: StoredMessage, seq: int, stored_at: str) -> None:
    """Add a message to a topic's view (ids already checked)."""
    topic.positions[message["id"]] = len(topic.messages)
    topic.messages.append(message)
    topic.count(message, stored_at)
    when = parse_time(message.get("timestamp")) or parse_time(stored_at) or NEVER
    topic.order[message["id"]] = (when, max(seq, 0))
