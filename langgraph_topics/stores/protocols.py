"""Protocols of the stores, so that embedded defaults can be swapped for servers at scale."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from langgraph_topics.state.records import ArchivedTopic, StoredMessage, SubtopicPart, TopicMeta
from langgraph_topics.stores.message_views import MessagesView
from langgraph_topics.stores.seq_ranges import SeqRanges
from langgraph_topics.summaries.card import SummaryCard


class Embedder(Protocol):
    """Turns texts into unit-length vectors (cosine similarity = dot product)."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed each text; the result has one vector per text, each of norm 1."""
        ...


class TopicStore(Protocol):
    """Durable home of split messages: one append-only file per topic, plus metadata.

    A crash at any point must leave files that reopen cleanly: a half-written last line is
    ignored (and reported) when the file is read back.
    """

    def create_topic(
        self, name: str, brief: str, *, parent_id: str | None = None, created_at: str | None = None
    ) -> TopicMeta:
        """Create an empty topic and return its metadata (a fresh, unique id)."""
        ...

    def append(self, topic_id: str, messages: Sequence[StoredMessage]) -> None:
        """Append messages to a topic; ids already stored anywhere are rejected (ValueError)."""
        ...

    def set_brief(
        self, topic_id: str, name: str, brief: str, *, card: SummaryCard | None = None
    ) -> None:
        """Replace the topic's name and brief (and the brief's card, seed 001 T3)."""
        ...

    def messages(self, topic_id: str) -> list[StoredMessage]:
        """All messages of a topic, in the order they were appended."""
        ...

    def get_messages(self, message_ids: Sequence[str]) -> dict[str, StoredMessage]:
        """Look messages up by id across all topics; unknown ids are left out."""
        ...

    def neighbours(self, message_id: str, before: int, after: int) -> list[StoredMessage]:
        """A stored message with up to ``before``/``after`` messages around it in its topic.

        In order; ``[]`` for an unknown id. Reading a quote's unit costs its size, not its
        topic's.
        """
        ...

    def locate(self, message_id: str) -> str | None:
        """The topic holding a message, or None."""
        ...

    def locate_many(self, message_ids: Iterable[str]) -> dict[str, str]:
        """The topic of each of the messages a topic holds (the others left out), in one look-up.

        A turn's topic windows read in parallel threads: one ``locate`` per id queued them on
        the store's lock (1,400 look-ups a turn at 437 topics).
        """
        ...

    def message_ids(self) -> dict[str, str]:
        """Every stored message id mapped to its topic id."""
        ...

    def topic_ids(self) -> list[str]:
        """Ids of all topics, oldest first."""
        ...

    def meta(self, topic_id: str) -> TopicMeta:
        """A topic's metadata (KeyError for an unknown id)."""
        ...

    def link(self, from_id: str, to_id: str, kind: str) -> None:
        """Record a relation between two topics (e.g. ``related``; ``stores/link_kinds``).

        Recording it again is a no-op; KeyError for an unknown or merged topic.
        """
        ...

    def links(self, topic_id: str) -> list[tuple[str, str]]:
        """Relations of a topic as ``(other_id, kind)``, each once.

        The package's stores list those their merge and split records make (``merged``,
        ``subtopic``) without a link record, then the recorded ones.
        """
        ...

    def transcript(self) -> list[StoredMessage]:
        """Every stored message across topics, in conversation order (for recovery)."""
        ...

    def time_index(self) -> dict[str, list[str]]:
        """Topics per day (``YYYY-MM-DD`` of the messages' timestamps) — seed 000 §9."""
        ...


@runtime_checkable
class BranchedTopicStore(Protocol):
    """A topic store whose reads follow a branch of the checkpoint history.

    docs/forks-and-check.md.

    Stores without it serve every branch the same records (a fork then sees what an abandoned
    branch split); the embedded JSONL store has it.
    """

    def visible_ranges(self) -> SeqRanges:
        """The record ranges this store answers from, its own writes included."""
        ...

    def on_branch(self, ranges: SeqRanges) -> TopicStore:
        """The same data as the branch that recorded ``ranges`` sees it."""
        ...


@runtime_checkable
class ReviewableTopicStore(Protocol):
    """A topic store the review can merge and archive in (both stores of the package have it).

    docs/review.md.
    """

    def merge_topics(self, source_id: str, into_id: str) -> None:
        """Retire ``source_id`` into ``into_id`` in one record; its messages become the target's.

        No message moves or is copied: every id stays stored once. Merging a topic already
        merged into the same target writes nothing. KeyError for an unknown or retired topic.
        """
        ...

    def merged_into(self, topic_id: str) -> str | None:
        """The live topic holding a merged topic's messages; None for one never merged."""
        ...

    def save_archive(self, entry: ArchivedTopic) -> None:
        """File an archived topic's compressed summary under its month."""
        ...

    def archive_entry(self, topic_id: str) -> ArchivedTopic | None:
        """A topic's filed summary, or None."""
        ...

    def archive_entries(self) -> list[ArchivedTopic]:
        """Every filed summary, month by month."""
        ...

    def drop_archive(self, topic_id: str) -> None:
        """Take a topic's filed summary off the shelf."""
        ...


@runtime_checkable
class SplittableTopicStore(Protocol):
    """A topic store that can split a topic into subtopics (seed 000 §4.5, §8).

    docs/subtopics.md. No message moves or is copied: one ``subtopics`` record in the
    parent's stream hands each of its messages to one child, so every id stays stored once.
    """

    def split_topic(
        self, parent_id: str, parts: Sequence[SubtopicPart], *, created_at: str | None = None
    ) -> list[str]:
        """Hand a topic's messages to new subtopics, one part each; return their ids in order.

        The parts must cover every message of the parent, each once, with at least two
        non-empty parts (ValueError, nothing written, otherwise). KeyError for an unknown or
        merged topic; ValueError for one already split.
        """
        ...

    def children(self, topic_id: str) -> list[str]:
        """The subtopics a split made of ``topic_id``, in order; ``[]`` if it was never split."""
        ...


@runtime_checkable
class ViewedTopicStore(Protocol):
    """A topic store that hands out a topic's messages without copying them."""

    def messages_view(self, topic_id: str) -> MessagesView:
        """The messages of ``messages(topic_id)`` as a snapshot view (KeyError if unknown)."""
        ...


class TopicIndex(Protocol):
    """Searchable index of topic briefs (the topic index window's material)."""

    def upsert(self, topic_id: str, name: str, brief: str, *, status: str) -> None:
        """Add or replace a topic's brief."""
        ...

    def set_status(self, topic_id: str, status: str, *, previous: str | None = None) -> None:
        """Record whether a topic is archived (searches leave archived topics out).

        An index keeps ``archived`` or ``active`` (``topic_index.indexed_status``): a
        dormant topic is as searchable as an active one, and moving between the two, as
        activation does every turn, need not be written. ``previous``: the status the
        registry held before (None: unknown); an index that keeps the two alike need not ask
        itself what it holds.
        """
        ...

    def search(
        self, query: str, *, k: int, exclude_status: Sequence[str] = ("archived",)
    ) -> list[tuple[str, float]]:
        """Topics most similar to the query as ``(topic_id, similarity in [0, 1])``, best first."""
        ...

    def remove(self, topic_id: str) -> None:
        """Remove a topic from the index."""
        ...

    def count(self) -> int:
        """Number of indexed topics."""
        ...

    def document_vector(self, topic_id: str, document: str) -> npt.NDArray[np.float32] | None:
        """The vector indexed for a topic whose indexed text is exactly ``document``, or None.

        A process that starts (each CLI chat) would otherwise embed every brief its topic
        windows score again: ~24 ms for a brief of ~1,000 characters, ~20 topics a turn.
        """
        ...
