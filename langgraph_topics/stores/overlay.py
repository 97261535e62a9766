"""Copy-on-write views of the stores, for context queries that must not change stored data.

``TopicMemory.context`` runs everything a turn runs before the response, split included; with
these views the split's appends, new topics and briefs live in memory and vanish afterwards.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import cast

import numpy as np
import numpy.typing as npt

from langgraph_topics.state.records import StoredMessage, TopicMeta
from langgraph_topics.stores.message_views import MessagesView
from langgraph_topics.stores.protocols import (
    BranchedTopicStore,
    TopicIndex,
    TopicStore,
    ViewedTopicStore,
)
from langgraph_topics.stores.seq_ranges import SeqRanges
from langgraph_topics.summaries.card import SummaryCard, with_days_of

DRY_RUN_PREFIX = "topic-dry"
"""Ids of topics that exist only in a dry-run view."""


class OverlayTopicStore:
    """Reads through to a base store; keeps every write in memory."""

    def __init__(self, base: TopicStore) -> None:
        self.base = base
        self._new_metas: dict[str, TopicMeta] = {}
        self._briefs: dict[str, tuple[str, str, SummaryCard | None]] = {}
        self._appended: dict[str, list[StoredMessage]] = {}
        self._located: dict[str, str] = {}
        self._ids = itertools.count(1)

    def create_topic(
        self, name: str, brief: str, *, parent_id: str | None = None, created_at: str | None = None
    ) -> TopicMeta:
        """Create a topic that exists only in this view."""
        topic_id = f"{DRY_RUN_PREFIX}{next(self._ids):04d}"
        now = created_at or datetime.now(UTC).isoformat()
        meta: TopicMeta = {
            "id": topic_id,
            "name": name,
            "brief": brief,
            "parent_id": parent_id,
            "created_at": now,
            "updated_at": now,
            "message_count": 0,
            "file": f"topics/{topic_id}.jsonl",
        }
        self._new_metas[topic_id] = meta
        return meta

    def append(self, topic_id: str, messages: Sequence[StoredMessage]) -> None:
        """Remember the messages as appended to the topic."""
        if topic_id not in self._new_metas:
            self.base.meta(topic_id)
        ids = [m["id"] for m in messages]
        if len(set(ids)) != len(ids) or any(self.locate(i) for i in ids):
            raise ValueError("message ids already stored")
        self._appended.setdefault(topic_id, []).extend(messages)
        self._located.update(dict.fromkeys(ids, topic_id))

    def set_brief(
        self, topic_id: str, name: str, brief: str, *, card: SummaryCard | None = None
    ) -> None:
        """Remember the new name, brief and card."""
        self._briefs[topic_id] = (name, brief, card)

    def messages(self, topic_id: str) -> list[StoredMessage]:
        """Base messages followed by the ones appended in this view."""
        base = [] if topic_id in self._new_metas else self.base.messages(topic_id)
        return [*base, *self._appended.get(topic_id, [])]

    def messages_view(self, topic_id: str) -> MessagesView:
        """:meth:`messages` without a copy when this view appended nothing to the topic."""
        if topic_id in self._new_metas or topic_id in self._appended:
            return MessagesView(self.messages(topic_id))
        if isinstance(self.base, ViewedTopicStore):
            return self.base.messages_view(topic_id)
        return MessagesView(self.base.messages(topic_id))

    def neighbours(self, message_id: str, before: int, after: int) -> list[StoredMessage]:
        """The message and its neighbours in its topic, this view's appends included."""
        topic_id = self.locate(message_id)
        if topic_id is None:
            return []
        if message_id not in self._located and topic_id not in self._appended:
            return self.base.neighbours(message_id, before, after)
        run = self.messages(topic_id)
        place = next(i for i, m in enumerate(run) if m["id"] == message_id)
        return run[max(0, place - before) : place + after + 1]

    def get_messages(self, message_ids: Sequence[str]) -> dict[str, StoredMessage]:
        """Look up in this view, then in the base store."""
        found = self.base.get_messages(message_ids)
        for messages in self._appended.values():
            for message in messages:
                if message["id"] in message_ids:
                    found[message["id"]] = message
        return found

    def locate(self, message_id: str) -> str | None:
        """The topic holding a message, in this view or the base."""
        return self._located.get(message_id) or self.base.locate(message_id)

    def locate_many(self, message_ids: Iterable[str]) -> dict[str, str]:
        """The topics holding the messages, in this view or the base."""
        wanted = list(message_ids)
        found = self.base.locate_many(wanted)
        found.update((i, self._located[i]) for i in wanted if i in self._located)
        return found

    def message_ids(self) -> dict[str, str]:
        """All message ids of the base and of this view."""
        return {**self.base.message_ids(), **self._located}

    def topic_ids(self) -> list[str]:
        """Base topics, then the ones created in this view."""
        return [*self.base.topic_ids(), *self._new_metas]

    def meta(self, topic_id: str) -> TopicMeta:
        """Metadata with this view's changes applied."""
        meta: TopicMeta = {**(self._new_metas.get(topic_id) or self.base.meta(topic_id))}
        if topic_id in self._briefs:
            meta["name"], meta["brief"], card = self._briefs[topic_id]
            previous = meta.pop("brief_card", None)
            if card is not None:  # the reviews' day digests stay, as the stores keep them
                meta["brief_card"] = cast(SummaryCard, with_days_of(previous, card))
        meta["message_count"] += len(self._appended.get(topic_id, []))
        return meta

    def link(self, from_id: str, to_id: str, kind: str) -> None:
        """Links made in a dry run are dropped."""

    def links(self, topic_id: str) -> list[tuple[str, str]]:
        """The base store's links."""
        return self.base.links(topic_id) if topic_id not in self._new_metas else []

    def transcript(self) -> list[StoredMessage]:
        """The base transcript followed by this view's appends."""
        return [*self.base.transcript(), *(m for ms in self._appended.values() for m in ms)]

    def visible_ranges(self) -> SeqRanges:
        """The base's ranges: writes kept in memory belong to no branch."""
        return self.base.visible_ranges() if isinstance(self.base, BranchedTopicStore) else []

    def on_branch(self, ranges: SeqRanges) -> TopicStore:
        """A fresh overlay on the base as another branch sees it."""
        if not isinstance(self.base, BranchedTopicStore):
            return self
        return OverlayTopicStore(self.base.on_branch(ranges))

    def time_index(self) -> dict[str, list[str]]:
        """The base store's time index (dry-run topics are not dated)."""
        return self.base.time_index()


class OverlayTopicIndex:
    """Searches a base index and a scratch index of the briefs written in this view."""

    def __init__(self, base: TopicIndex, scratch: TopicIndex) -> None:
        self.base = base
        self.scratch = scratch
        self._shadowed: set[str] = set()
        self._status: dict[str, str] = {}

    @property
    def embedder(self) -> object:
        """The base index's embedder (the model its vectors, and the scratch index's, are of)."""
        return getattr(self.base, "embedder", None)

    def upsert(self, topic_id: str, name: str, brief: str, *, status: str) -> None:
        """Index the brief in the scratch index only."""
        self.scratch.upsert(topic_id, name, brief, status=status)
        self._shadowed.add(topic_id)

    def set_status(self, topic_id: str, status: str, *, previous: str | None = None) -> None:
        """Remember the status in this view."""
        self._status[topic_id] = status
        if topic_id in self._shadowed:
            self.scratch.set_status(topic_id, status, previous=previous)

    def search(
        self, query: str, *, k: int, exclude_status: Sequence[str] = ("archived",)
    ) -> list[tuple[str, float]]:
        """Merge both indexes' hits, this view's briefs and statuses winning."""
        hits = dict(self.scratch.search(query, k=k, exclude_status=exclude_status))
        for topic_id, score in self.base.search(
            query, k=k + len(self._shadowed), exclude_status=exclude_status
        ):
            if topic_id in self._shadowed or self._status.get(topic_id) in exclude_status:
                continue
            hits[topic_id] = score
        return sorted(hits.items(), key=lambda hit: hit[1], reverse=True)[:k]

    def remove(self, topic_id: str) -> None:
        """Hide a topic in this view."""
        self._status[topic_id] = "archived"

    def document_vector(self, topic_id: str, document: str) -> npt.NDArray[np.float32] | None:
        """The vector of a brief written in this view, else the base index's."""
        index = self.scratch if topic_id in self._shadowed else self.base
        return index.document_vector(topic_id, document)

    def count(self) -> int:
        """Topics indexed in the base plus those created in this view."""
        created = {t for t in self._shadowed if t.startswith(DRY_RUN_PREFIX)}
        return self.base.count() + len(created)
