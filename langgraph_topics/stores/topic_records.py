"""What both topic stores make of a thread's records, and the reads they answer from memory.

The JSONL store (``topic_store``) and the ``BaseStore`` one (``base_store_topics``) keep the
same records (``topic`` headers, ``message``, ``brief`` and ``link`` records, ``merged`` and
``subtopics`` ones: ``merged_topics``, ``subtopics``; each with a sequence number) and the same
in-memory index of them: per topic its metadata, first number and days, its merge and split,
each message id's topic, the links. :class:`TopicRecordIndex` holds that index and
answers the reads of the ``TopicStore`` protocol from it; a store subclasses it and adds where
the records live (files and catalogs, or ``BaseStore`` items and a head) and how the messages
of a topic are held (parsed lazily per topic, or all on open).
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Generic, TypeVar, cast

from langgraph_topics.state.records import ArchivedTopic, StoredMessage, SubtopicPart, TopicMeta
from langgraph_topics.stores.archive_shelves import ArchiveShelf
from langgraph_topics.stores.link_kinds import MERGED_LINK, SUBTOPIC_LINK
from langgraph_topics.stores.merged_topics import combined, live_topic, merge_record
from langgraph_topics.stores.message_views import MessagesView
from langgraph_topics.stores.seq_ranges import SeqRanges
from langgraph_topics.stores.subtopics import (
    SUBTOPIC_MARK,
    SplitChild,
    check_parts,
    split_children,
    subtopics_record,
)
from langgraph_topics.summaries.card import SummaryCard, with_days_of

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
    return take_message(dict(record))


def take_message(record: dict[str, Any]) -> StoredMessage | None:
    """:func:`message_from_record` made of ``record`` itself, for a record just decoded.

    Reopening a long thread builds every message of its active topics this way; a copy of
    each record was a fifth of it.
    """
    for key in RESERVED_KEYS:
        record.pop(key, None)
    if not isinstance(record.get("id"), str) or not isinstance(record.get("content"), str):
        return None
    return cast(StoredMessage, record)


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
    previous = meta.pop("brief_card", None)
    if isinstance(record.get("card"), dict):
        # The reviews' day digests outlive the briefs written after them (summaries.card).
        meta["brief_card"] = cast(SummaryCard, with_days_of(previous, record["card"]))


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
    from_split: bool = False
    """Its header says a split made it (until the split's record names it, a split cut
    short may have left it)."""
    split: list[SplitChild] | None = None
    """The children its ``subtopics`` record names (``subtopics``), once it was split."""
    split_seq: int = -1
    """The sequence number of that record: nested splits are taken in the order made."""
    children: list[str] = field(default_factory=list)
    """The children of its split that the branch knows, in order."""
    handed: dict[str, str] = field(default_factory=dict)
    """Each message its split handed over, mapped to the child that took it."""
    split_from: str | None = None
    """The topic whose split made this one (its part is ``inherited``)."""
    inherited: tuple[str, ...] = ()
    """The ids of its part of the parent, in the parent's order."""
    inherited_days: set[str] = field(default_factory=set)
    """The days of its part's messages (``days`` holds those of its own records)."""

    def take_split(self, record: dict[str, Any], seq: int) -> bool:
        """Take in a ``subtopics`` record of this topic; False when it cannot be read.

        What the parent held until then is its children's: its own days start again.
        """
        children = split_children(record)
        if children is None or self.split is not None:
            return False
        self.split, self.split_seq, self.days = children, seq, set()
        return True

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
    created = topic.meta["created_at"]
    return (_created_time(created) if isinstance(created, str) else NEVER), topic.seq


# Every turn lists the registry's topics in order (``topic_ids``): 450 creation times parsed
# again a turn in a 10,000-turn thread, for times that never change once written.
@lru_cache(maxsize=4096)
def _created_time(created_at: str) -> datetime:
    return parse_time(created_at) or NEVER


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
    _merged_parts: tuple[int, dict[str, list[str]]] | None = None
    """Per live topic, the merged topics whose messages it holds (with the topic count it was
    made at); None until asked for, and after a merge is taken in (``_merges_changed``)."""
    _shelf: ArchiveShelf
    """Where archived topics' summaries are filed (``archive_shelves``)."""

    def _clear_index(self) -> None:
        """Start an empty index answering from the ranges the store was opened with."""
        self._topics = {}
        self._locations = {}
        self._links = []
        self._combined_cache = {}
        self._merged_parts = None
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

    def _unseen_copies(
        self, topic: TopicT, messages: Sequence[StoredMessage]
    ) -> list[tuple[int, str]]:
        """Records of the first ``messages`` that ``topic`` already stores unseen by the branch.

        Returns ``(seq, stored_at)`` of each, for a prefix of ``messages``: what an append cut
        short left (its checkpoint never recorded it), which appending them again would store
        twice. None by default (a store that cannot tell).
        """
        return []

    def _take_unseen(self, seqs: Sequence[int]) -> None:
        """Count records :meth:`_unseen_copies` found as the branch's from now on."""

    def _days_changed(self) -> None:
        """Follow up a write that changed :meth:`time_index` (nothing by default).

        Called after a split, a merge, or an append that gave a topic a new day: never after
        an append on days the topic already had, so that a store keeping the index elsewhere
        (the JSONL store's ``time-index.json``) writes nothing on most turns.
        """

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
        """A live topic's messages, merged topics' included, and each one's index among them.

        A topic a split made or split holds what the locations give it: its part of the
        parent, then its own records, less what a split of its own handed on.
        """
        parts = self._members(topic_id)
        topics = [self._topics[part] for part in parts]
        splits = any(topic.inherited or topic.handed for topic in topics)
        if len(parts) == 1 and not splits:
            return self._loaded(topics[0])
        cached = self._combined_cache.get(topic_id)
        if cached is None:
            if splits:
                located = self._locations
                loaded = [
                    [m for m in self._own(topic) if located.get(m["id"]) == topic_id]
                    for topic in topics
                ]
            else:
                loaded = [self._loaded(topic)[0] for topic in topics]
            cached = combined(loaded, _message_time) if len(loaded) > 1 else _indexed(loaded[0])
            self._combined_cache[topic_id] = cached
        return cached

    def _own(self, topic: TopicT) -> list[StoredMessage]:
        """A topic's part of its parent (if a split made it), then its own records' messages."""
        own = self._loaded(topic)[0]
        if not topic.inherited or topic.split_from not in self._topics:
            return own
        source = self._reachable(topic.split_from)
        return [source[i] for i in topic.inherited if i in source] + own

    def _reachable(self, topic_id: str) -> dict[str, StoredMessage]:
        """Every message a topic's records, its part and its merged topics' hold, by id."""
        found: dict[str, StoredMessage] = {}
        for part in self._members(topic_id):
            for message in self._own(self._topics[part]):
                found.setdefault(message["id"], message)
        return found

    def _holder(self, topic_id: str, message_id: str) -> str:
        """The live topic holding a message stored in ``topic_id``'s records: merges, splits."""
        current = live_topic(self._topics, topic_id)
        seen = {current}
        while True:
            child = self._topics[current].handed.get(message_id)
            if child is None or child not in self._topics:
                return current
            following = live_topic(self._topics, child)
            if following in seen:  # records edited by hand: stop where the walk was
                return current
            seen.add(following)
            current = following

    def _link_split(self, parent: TopicT) -> None:
        """Take a split into memory: its children's parts, and its messages' new topics.

        A child the branch does not know (a damaged record) is skipped: its messages stay
        with the parent rather than vanish.
        """
        parent_id = parent.meta["id"]
        handed: dict[str, str] = {}
        children: list[str] = []
        for child in parent.split or []:
            topic = self._topics.get(child.id)
            if topic is None:
                logging.getLogger(type(self).__module__).warning(
                    "subtopic %s of %s is unknown; its messages stay with %s",
                    child.id,
                    parent_id,
                    parent_id,
                )
                continue
            topic.split_from, topic.inherited = parent_id, child.messages
            topic.inherited_days = set(child.days)
            children.append(child.id)
            handed.update(dict.fromkeys(child.messages, child.id))
        parent.handed, parent.children = handed, children
        for message_id, child_id in handed.items():
            if self._locations.get(message_id) == parent_id:
                self._locations[message_id] = live_topic(self._topics, child_id)
        self._combined_cache.clear()

    def _settle_splits(self) -> None:
        """After loading: take the splits in the order made; leave interrupted ones out.

        A topic whose header says a split made it, that no visible record names and that
        holds no message, is what a crash between a split's headers and its record leaves: it
        never existed.
        """
        named: set[str] = set()
        split = [topic for topic in self._topics.values() if topic.split is not None]
        for parent in sorted(split, key=lambda topic: topic.split_seq):
            self._link_split(parent)
            named.update(parent.children)
        targets = {topic.merged_into for topic in self._topics.values()}
        interrupted = [
            topic_id
            for topic_id, topic in self._topics.items()
            if topic.from_split
            and topic_id not in named
            and topic_id not in targets
            and topic.meta["message_count"] == 0
            and topic.split is None
        ]
        if interrupted:
            logging.getLogger(type(self).__module__).warning(
                "left out %d empty subtopics no split names (a split a crash cut short): %s",
                len(interrupted),
                ", ".join(interrupted),
            )
            for topic_id in interrupted:
                del self._topics[topic_id]
            self._merges_changed()

    def _count(self, topic_id: str) -> int:
        """How many messages a live topic holds (without reading them)."""
        parts = self._members(topic_id)
        stored = sum(
            self._topics[part].meta["message_count"] + len(self._topics[part].inherited)
            for part in parts
        )
        return max(0, stored - len(self._topics[topic_id].handed))

    def _merges(self) -> bool:
        return bool(self._merge_index())

    def _members(self, topic_id: str) -> list[str]:
        """``members(self._topics, topic_id)``, from an index instead of a walk of all topics.

        Every message read asks which topics a topic holds: walking all of them each time made
        a chat turn grow with the thread (1,600 walks of 80 topics a turn after 1,500 turns of
        ``bench soak``).
        """
        return [topic_id, *self._merge_index().get(topic_id, ())]

    def _merge_index(self) -> dict[str, list[str]]:
        """Live topic → the merged topics it holds, in ``members``'s order; empty: no merge.

        Made again when the number of topics changed (a topic added or left out) or a merge was
        taken in (:meth:`_merges_changed`, wherever ``merged_into`` is set).
        """
        known = self._merged_parts
        if known is not None and known[0] == len(self._topics):
            return known[1]
        index: dict[str, list[str]] = {}
        for other, topic in self._topics.items():
            if topic.merged_into is not None:
                owner = live_topic(self._topics, other)
                if owner != other:
                    index.setdefault(owner, []).append(other)
        self._merged_parts = (len(self._topics), index)
        return index

    def _merges_changed(self) -> None:
        """Make the merge index again when next asked (a merge taken in, topics left out)."""
        self._merged_parts = None

    def _retire(self, source_id: str, into_id: str) -> None:
        """Take a stored merge into memory: the source's messages now belong to the target."""
        self._topics[source_id].merged_into = into_id
        self._merges_changed()
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
        # The store's own logger, as when each store logged this itself. Read unfiltered
        # (every record, before a branch's view is taken), a message is in two topics whenever
        # a split a crash cut short, or another branch, wrote it again: ``check`` reports those
        # as notes; a warning on every open would repeat them forever. A branch's own view
        # holding one twice is a real fault, and warned about.
        store_logger = logging.getLogger(type(self).__module__)
        level = logging.DEBUG if self._filter is None else logging.WARNING
        for message_id in message_ids:
            owner = self._locations.setdefault(message_id, topic_id)
            if owner != topic_id:
                store_logger.log(
                    level,
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
            return self._new_topic(name, brief, parent_id, created_at or self._clock())

    def _new_topic(
        self, name: str, brief: str, parent_id: str | None, created: str, *, split: bool = False
    ) -> TopicMeta:
        """Store a new topic's header under a fresh id and index it (arguments checked).

        ``split``: a split makes it; its header says so (``subtopics.SUBTOPIC_MARK``).
        """
        while True:
            topic_id = f"topic-{secrets.token_hex(4)}"
            if topic_id not in self._topics and not self._topic_id_taken(topic_id):
                break
        header: dict[str, Any] = {
            "type": "topic",
            "id": topic_id,
            "name": name,
            "brief": brief,
            "parent_id": parent_id,
            "created_at": created,
        }
        if split:
            header[SUBTOPIC_MARK] = True
        meta = new_meta(topic_id, name=name, brief=brief, parent_id=parent_id, created_at=created)
        topic = self._topics[topic_id] = self._store_topic(header, meta)
        topic.from_split = split
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
            # A split cut short (a full disk, a crash) may have stored the first of them here
            # already, unseen by the branch: those records are taken, not written again, so
            # that the topic never holds an id twice.
            held = self._unseen_copies(topic, messages)
            days = len(topic.days)
            stored_at = self._clock()
            rest = messages[len(held) :]
            records = [{"type": "message", "stored_at": stored_at, **m} for m in rest]
            start = self._store(topic_id, records) if records else 0
            placed = [*held, *((start + offset, stored_at) for offset in range(len(rest)))]
            self._take_unseen([seq for seq, _ in held])
            for message, (seq, when) in zip(messages, placed, strict=True):
                copy = message.copy()
                self._locations[copy["id"]] = topic_id
                self._add_message(topic, copy, seq, when)
            self._combined_cache.pop(topic_id, None)
            self._stored(topic)
            if len(topic.days) != days:  # a day the topic was not talked about on before
                self._days_changed()

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
        return list(self.messages_view(topic_id))

    def messages_view(self, topic_id: str) -> MessagesView:
        """The messages of :meth:`messages`, without copying them (``stores/message_views``).

        Raises:
            KeyError: Unknown topic.
        """
        with self._lock:
            self._catch_up()
            self._live(topic_id)
            return MessagesView(self._holding(topic_id)[0])

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
            # A turn asks for a thousand quotes of a few topics: each topic's records once.
            held: dict[str, tuple[list[StoredMessage], dict[str, int]]] = {}
            for message_id in message_ids:
                topic_id = self._locations.get(message_id)
                if topic_id is None or message_id in found:
                    continue
                holding = held.get(topic_id)
                if holding is None:
                    holding = held[topic_id] = self._holding(topic_id)
                messages, positions = holding
                place = positions.get(message_id)
                if place is not None:
                    found[message_id] = messages[place].copy()
            return found

    def locate(self, message_id: str) -> str | None:
        """Return the topic holding a message, or None."""
        with self._lock:
            self._catch_up()
            return self._locations.get(message_id)

    def locate_many(self, message_ids: Iterable[str]) -> dict[str, str]:
        """The topic of each of the messages a topic holds, under one hold of the lock."""
        with self._lock:
            self._catch_up()
            locations = self._locations
            found = ((i, locations.get(i)) for i in message_ids)
            return {i: topic for i, topic in found if topic is not None}

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

        A topic holding merged ones counts their messages too; a split one counts only what
        was appended to it after the split (its children hold the rest), a subtopic its part.

        Raises:
            KeyError: Unknown topic, or one merged into another.
        """
        with self._lock:
            self._catch_up()
            meta = self._live(topic_id).meta.copy()
            for part in self._members(topic_id)[1:]:
                meta["updated_at"] = max(meta["updated_at"], self._topics[part].meta["updated_at"])
            meta["message_count"] = self._count(topic_id)
            return meta

    def merge_topics(self, source_id: str, into_id: str) -> None:
        """Retire ``source_id`` into ``into_id``: its messages become the target's (one record).

        Idempotent: merging a topic already merged into the same target writes nothing.

        Raises:
            KeyError: Either topic is unknown, or already merged into another one.
            ValueError: A topic merged into itself, or either topic has subtopics (a split
                topic's messages are its children's; its children merge like any topic).
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
            for topic_id in (source_id, into_id):
                if self._topics[topic_id].split is not None:
                    raise ValueError(f"topic {topic_id!r} has subtopics: it cannot be merged")
            self._store(source_id, [merge_record(into_id, self._clock())])
            self._retire(source_id, into_id)
            self._stored(source)
            self._days_changed()

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

    def split_topic(
        self, parent_id: str, parts: Sequence[SubtopicPart], *, created_at: str | None = None
    ) -> list[str]:
        """Hand a topic's messages to new subtopics, one part each (``subtopics``).

        Every check runs before anything is written; then each child's header, and last the
        one ``subtopics`` record in the parent's stream, so that a crash leaves the split
        whole or absent (children without a record are left out on open).

        Args:
            parent_id: The topic to split.
            parts: The subtopics: name, brief and the ids of the parent's messages each takes.
            created_at: ISO-8601 time of the split (the children's creation); now if omitted.

        Returns:
            The children's ids, in the order of ``parts``.

        Raises:
            KeyError: Unknown topic, or one merged into another.
            ValueError: The topic is already split; fewer than two parts, an empty one, an id
                the topic does not hold, in two parts or in none (the first such id named);
                ``created_at`` is not an ISO-8601 time. Nothing is written then.
        """
        check_created_at(created_at)
        with self._lock:
            self._catch_up()
            parent = self._live(parent_id)
            if parent.split is not None:
                raise ValueError(f"topic {parent_id!r} is already split")
            held = self._holding(parent_id)[0]
            ordered = check_parts(parent_id, held, parts)
            split_at = created_at or self._clock()
            by_id = {message["id"]: message for message in held}
            made: list[str] = []
            try:
                for part in parts:
                    made.append(
                        self._new_topic(
                            part["name"], part["brief"], parent_id, split_at, split=True
                        )["id"]
                    )
                children = [
                    SplitChild(child, tuple(ids), _days([by_id[i] for i in ids], split_at))
                    for child, ids in zip(made, ordered, strict=True)
                ]
                seq = self._store(parent_id, [subtopics_record(children, split_at)])
            except BaseException:
                # Children without their record are left out on open: so they are now.
                for child in made:
                    self._topics.pop(child, None)
                self._merges_changed()
                raise
            parent.take_split(subtopics_record(children, split_at), seq)
            self._link_split(parent)
            self._stored(parent)
            self._days_changed()
            return made

    def children(self, topic_id: str) -> list[str]:
        """The subtopics a split made of ``topic_id``, in order; ``[]`` if it was never split.

        Raises:
            KeyError: Unknown topic.
        """
        with self._lock:
            self._catch_up()
            return list(self._topic(topic_id).children)

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
        """Relations of a topic as ``(other_id, kind)``, in either direction, each once.

        Those its split and merge records make (``link_kinds``) come first: its parent and
        children (``subtopic``; the direction is ``meta(...)["parent_id"]``), then the topic it
        was merged into and those merged into it (``merged``; a retired topic is the one
        ``merged_into`` names a target for). The ``link`` records follow, oldest first.
        """
        with self._lock:
            self._catch_up()
            related = self._record_links(topic_id)
            for source, target, kind in self._links:
                if topic_id in (source, target):
                    pair = (target if source == topic_id else source, kind)
                    if pair not in related:
                        related.append(pair)
            return related

    def _record_links(self, topic_id: str) -> list[tuple[str, str]]:
        """The relations of a topic its split and merge records make (``link_kinds``)."""
        topic = self._topics.get(topic_id)
        if topic is None:
            return []
        related: list[tuple[str, str]] = []
        if topic.split_from is not None:
            related.append((topic.split_from, SUBTOPIC_LINK))
        related += [(child, SUBTOPIC_LINK) for child in topic.children]
        if topic.merged_into is not None and topic.merged_into in self._topics:
            related.append((topic.merged_into, MERGED_LINK))
        # Those merged into it are among the topics its live topic holds (an index, no walk).
        for member in self._merge_index().get(self._owner(topic_id), ()):
            if self._topics[member].merged_into == topic_id:
                related.append((member, MERGED_LINK))
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
                topic = self._topics[topic_id]
                if topic.split is not None:  # what it held until then counts for its children
                    days = set(topic.days)
                else:
                    parts = self._members(topic_id) if merges else [topic_id]
                    days = set().union(
                        *(self._topics[p].days | self._topics[p].inherited_days for p in parts)
                    )
                for day in days:
                    index.setdefault(day, []).append(topic_id)
            return {day: index[day] for day in sorted(index)}


def _indexed(messages: list[StoredMessage]) -> tuple[list[StoredMessage], dict[str, int]]:
    """Messages and each one's index among them (the first, should an id repeat)."""
    positions: dict[str, int] = {}
    for place, message in enumerate(messages):
        positions.setdefault(message["id"], place)
    return messages, positions


def _days(messages: Sequence[StoredMessage], split_at: str) -> tuple[str, ...]:
    """The days a part's messages count on, ascending (undated ones: the day of the split)."""
    fallback = day_of(split_at)
    days = {day_of(message.get("timestamp")) or fallback for message in messages}
    return tuple(sorted(day for day in days if day is not None))


def _message_time(message: StoredMessage) -> datetime:
    """A message's place in the conversation when topics are merged (undated ones last)."""
    return parse_time(message.get("timestamp")) or NEVER
