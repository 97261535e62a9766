"""One interface per model role; every role has a native and an LLM back end.

The nodes only see these protocols. A back end receives plain records (never graph state) and
returns plain records; validation that protects the stores (every message assigned once, ids
known, scores in range) happens in the nodes, whatever the back end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NotRequired, Protocol, TypedDict, runtime_checkable

import numpy as np
import numpy.typing as npt
from langchain_core.messages import ToolCall

from langgraph_topics.state.records import (
    AssembledContext,
    MemorySearchRequest,
    StoredMessage,
    TopicStatus,
)
from langgraph_topics.summaries.card import SummaryCard

if TYPE_CHECKING:
    from langgraph_topics.retrieval.evidence import Evidence


class TopicInfo(TypedDict):
    """What a role is told about a topic."""

    id: str
    name: str
    brief: str
    status: TopicStatus
    file: str
    latest_unit: NotRequired[list[StoredMessage]]
    """Only on the topic holding the newest split message: that message's unit, the one the
    units of the next split follow (seed 003 compares a round with the one before it, and a
    split boundary is no change of subject)."""


class NewTopic(TypedDict):
    """A topic the splitter wants created."""

    key: str
    """A label local to one split plan, referenced by assignments."""
    name: str
    brief: str


class SplitAssignment(TypedDict):
    """Messages that go to one topic: an existing one (``topic_id``) or a new one (``new_key``)."""

    message_ids: list[str]
    topic_id: str | None
    new_key: str | None


class SplitPlan(TypedDict):
    """The splitter's answer: where each message goes (seed 000 §6.4)."""

    assignments: list[SplitAssignment]
    new_topics: list[NewTopic]


class TopicVerdict(TypedDict):
    """A topic window's answer (seed 000 §4.2 / §6.1)."""

    relevance_score: float
    referenced_message_ids: list[str]
    summary: str
    reference_relevance: NotRequired[list[float]]
    """Relevance in [0, 1] of each referenced message, in the order of the ids (optional)."""
    card: NotRequired[SummaryCard]
    """The summary as a card citing message ids (optional: the node builds one when absent)."""
    prompt_refused: NotRequired[bool]
    """The model refused the topic's prompt as too long; this verdict is the native back
    end's, and the topic is to be divided into subtopics (``langgraph_topics.subtopics``)."""


class RoutedTopic(TypedDict):
    """One topic chosen by the index router, with its relevance in [0, 1]."""

    topic_id: str
    relevance: float
    reason: str


class IndexWindow(TypedDict):
    """What the index window reads besides the searched candidates (seed 000 §2–3).

    Built by the activate node within ``Settings.index_window_tokens`` (the token counter's
    count), so a thread of a thousand topics still gives the cheap model a bounded prompt.
    """

    recent: list[TopicInfo]
    """The recently active topics, most recently active first: what the conversation is
    already about, so a query that continues one of them is not taken for a new subject."""
    days: list[tuple[str, list[str]]]
    """The time index, newest day first: ``(YYYY-MM-DD, topic names discussed that day)``."""


class IndexRouting(TypedDict):
    """The index window's answer: the ranked candidates, or a confirmed new subject."""

    topics: list[RoutedTopic]
    new_topic: bool
    """No candidate and no recent topic matches: the query opens a new subject, and the next
    split starts a new topic with this turn's messages (seed 000 §3: 无匹配 → 确认为新话题)."""


class ResponderReply(TypedDict):
    """The responder's answer: a text, or a request to activate topics first."""

    text: str
    activate_query: str | None
    """When set, the reply is discarded and topics matching this query are activated."""
    tool_calls: NotRequired[list[ToolCall]]
    """Calls of the application's own tools, recorded with the reply (``with_topic_memory``)."""
    message_id: NotRequired[str]
    """The id to record the reply under (a streamed reply keeps the id its chunks carried)."""
    read_namespace: NotRequired[str | None]
    """When set, the reply is discarded and the stored tool result of this reference is shown
    in full in the next window (``read_namespace``; offered while ``namespace_refs`` is set)."""
    search_memory: NotRequired[MemorySearchRequest | None]
    """When set, the reply is discarded, the thread is searched and the next window gives the
    hits as the call's reply (``search_memory``; offered while ``can_search`` is set)."""


class Splitter(Protocol):
    """Assigns older unsplit messages to topics (strong model)."""

    def split(
        self, units: Sequence[Sequence[StoredMessage]], topics: Sequence[TopicInfo]
    ) -> SplitPlan:
        """Assign every message of ``units``; messages of one unit must go to one topic."""
        ...


@runtime_checkable
class IndexedSplitter(Splitter, Protocol):
    """A splitter that compares units with the topics' briefs by meaning.

    The caller passes the topic index's vectors of the briefs, so such a back end does not
    embed every open topic's brief again after a restart (~24 ms a brief of ~1,000 characters).
    """

    @property
    def embedder(self) -> object | None:
        """The embedder whose vectors it compares (None: none).

        The caller passes the index's vectors only when the index has the same embedder.
        """
        ...

    def split_with_briefs(
        self,
        units: Sequence[Sequence[StoredMessage]],
        topics: Sequence[TopicInfo],
        *,
        stored_brief: Callable[[str, str], npt.NDArray[np.float32] | None],
    ) -> SplitPlan:
        """Like ``split``, with the topic index's vectors of the briefs.

        ``stored_brief(topic_id, text)``: the vector the topic index holds for a topic whose
        indexed text is exactly ``text`` (None where it holds none).
        """
        ...


class TopicWindow(Protocol):
    """Reads one topic against the unsplit messages (cheap model, run in parallel)."""

    def evaluate(
        self,
        topic: TopicInfo,
        topic_messages: Sequence[StoredMessage],
        unsplit: Sequence[StoredMessage],
    ) -> TopicVerdict:
        """Score the topic's relevance and pick the messages the main window needs."""
        ...


@runtime_checkable
class EvidenceTopicWindow(TopicWindow, Protocol):
    """A topic window that can use the turn's precomputed message evidence.

    The node passes the thread-wide scores of the turn (seed 004 §3: history indexed once),
    so such a back end neither embeds the topic's messages again nor scores them apart from
    the other topics.
    """

    def evaluate_with_evidence(
        self,
        topic: TopicInfo,
        topic_messages: Sequence[StoredMessage],
        unsplit: Sequence[StoredMessage],
        evidence: Evidence,
        *,
        stored_brief: Callable[[str], npt.NDArray[np.float32] | None] | None = None,
    ) -> TopicVerdict:
        """Like ``TopicWindow.evaluate``, with each message's relevance to the question.

        ``stored_brief``: the topic index's vector of a brief text (None where it holds none),
        for a back end that would otherwise embed the brief.
        """
        ...

    def score_with_evidence(
        self,
        topic: TopicInfo,
        scored_ids: Sequence[str],
        evidence: Evidence,
        *,
        with_brief: bool = True,
        stored_brief: Callable[[str], npt.NDArray[np.float32] | None] | None = None,
    ) -> float | None:
        """The topic's score alone (None: the evidence holds none of ``scored_ids``)."""
        ...


class BriefWriter(Protocol):
    """Rewrites a topic's name and brief after messages are appended (cheap model)."""

    def write(self, topic: TopicInfo, messages: Sequence[StoredMessage]) -> tuple[str, str]:
        """Return ``(name, brief)``; the brief is about 1 KB (seed 000 §4.6)."""
        ...


@runtime_checkable
class IndexedBriefWriter(BriefWriter, Protocol):
    """A brief writer that compares sentences by meaning and can take indexed vectors.

    The caller passes the message index's lookup of stored vectors, so such a back end does
    not embed again a sentence that is a whole indexed message (``bench soak``: the brief
    writer's embeddings grew from 352 to 734 per 120 turns between 1,000 and 5,800 turns).
    """

    @property
    def embedder(self) -> object | None:
        """The embedder whose vectors it compares (None: none).

        The caller passes the index's vectors only when the index has the same embedder.
        """
        ...

    def write_with_vectors(
        self,
        topic: TopicInfo,
        messages: Sequence[StoredMessage],
        *,
        stored_vectors: Callable[[Sequence[str]], Mapping[str, npt.NDArray[np.float32]]],
    ) -> tuple[str, str]:
        """Like ``write``, with the message index's vectors.

        ``stored_vectors``: message ids → the embeddings of their ``indexed_text`` the index
        holds (ids it lacks are left out).
        """
        ...


@runtime_checkable
class CardBriefWriter(Protocol):
    """A brief writer that also writes the brief as a card (seed 001 T3)."""

    def write_with_card(
        self, topic: TopicInfo, messages: Sequence[StoredMessage]
    ) -> tuple[str, str, SummaryCard]:
        """Return ``(name, brief, card)``: the card's text is the brief, its facts cite messages."""
        ...


class IndexRouter(Protocol):
    """Picks topics from index candidates (cheap model, seed 000 §6.3)."""

    def route(
        self, query: str, candidates: Sequence[tuple[TopicInfo, float]], *, deep: bool
    ) -> list[RoutedTopic]:
        """Rank the candidates (given with their index similarity) for the query, best first."""
        ...


@runtime_checkable
class WindowIndexRouter(IndexRouter, Protocol):
    """An index router that reads the whole index window and may confirm a new topic.

    The node builds the window (recent briefs, time index) only for such a router, so a router
    that would ignore it (the native one) costs nothing more and ranks as before.
    """

    def route_window(
        self,
        query: str,
        candidates: Sequence[tuple[TopicInfo, float]],
        window: IndexWindow,
        *,
        deep: bool,
    ) -> IndexRouting:
        """Rank the candidates as ``route`` does, seeing ``window`` too; or say none fits."""
        ...


class Responder(Protocol):
    """Answers the user from the assembled main window (strong model)."""

    def respond(self, context: AssembledContext, *, can_activate: bool) -> ResponderReply:
        """Answer, or ask for topic activation when ``can_activate`` and context is missing."""
        ...


@runtime_checkable
class IndexedResponder(Responder, Protocol):
    """A responder that compares messages by meaning and can take their indexed vectors.

    The node passes the vectors the message index already holds for the window's quotes, so
    such a back end does not embed a long thread's quotes again every turn.
    """

    @property
    def embedder(self) -> object | None:
        """The embedder whose vectors it compares (None: none).

        The node passes the index's vectors only when the index has the same embedder.
        """
        ...

    def respond_with_vectors(
        self,
        context: AssembledContext,
        *,
        can_activate: bool,
        vectors: Mapping[str, npt.NDArray[np.float32]],
    ) -> ResponderReply:
        """Like ``respond``; ``vectors``: message id → the embedding of its ``indexed_text``."""
        ...


class ThemeMaterial(TypedDict):
    """What a theme phraser is shown of one theme: precomputed material, never the history."""

    theme_id: str
    name: str
    """The native name: the theme's keyword as the thread writes it."""
    keywords: list[str]
    units: list[str]
    """One line per event unit shown, oldest first: date, headline keywords, one-liner."""
    states: list[str]
    """Its changes of state in time order: date, kind, object."""


class ThemePhrase(TypedDict):
    """A theme as a model phrased it."""

    name: str
    """A short name as a person writes it."""
    summary: str
    """One line on its timeline."""


class ThemePhraser(Protocol):
    """Phrases themes from their material (seed 004 §3: the model only phrases)."""

    def phrase(self, materials: Sequence[ThemeMaterial]) -> dict[str, ThemePhrase]:
        """Theme id → its phrase; a theme left out keeps its native name (never raises)."""
        ...


@dataclass
class Roles:
    """The back end serving each role."""

    splitter: Splitter
    topic_window: TopicWindow
    brief_writer: BriefWriter
    index_router: IndexRouter
    responder: Responder
    theme_phraser: ThemePhraser | None = None
    """Names and summarises themes when ``themes``/``trace`` are asked (the brief writer's
    model: the cheap tier); None: the native names stand."""
