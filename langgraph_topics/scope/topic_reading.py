"""The cheap model reads the user's other threads' best topics (user scope; seed 000 §4.2).

A user-scope turn finds the other threads' messages for its question by their evidence
(``recall.py``). Where the topic window is a model, the topics holding the best of those
messages are also read as the turn's own topics are: the whole topic against the question, by
the topic-window role, so the main window gets the cheap model's summary of what the other
thread said besides the quotes the evidence found.

Cost and time: at most ``Settings.scope_topics`` topics a turn (2 by default), only topics
holding a quote that passed the similarity bar (an unrelated question reads none), and never
with the native window (it reads a topic by the same evidence the quotes came from). The
topics' messages are copied while their thread's files lock is held; the model calls run
after, in parallel with each other and with the turn's own graph (they start before it), under
the turn's deadline. The assembly takes the readings that have ended and waits for none
(``ScopeReading.ready_topics``), so the turn is never slower for them: a turn whose own
windows take a cheap model's time gets them, one with no window of its own may not. A
reading that fails leaves its topic out of the turn with one warning; the quotes stay.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypedDict, overload

from langgraph_topics.errors import first_line
from langgraph_topics.namespace.unsplit_shown import shown_unsplit
from langgraph_topics.nodes.topic_window import (  # the turn's own windows' rules
    bounded_summary,
    clamp_score,
    reference_relevance,
    topic_as_shown,
)
from langgraph_topics.roles.llm.deadline import settings_deadline
from langgraph_topics.runtime_protocols import uses_evidence
from langgraph_topics.scope.quotable import quotable

if TYPE_CHECKING:
    from langgraph_topics.roles.protocols import TopicInfo, TopicWindow
    from langgraph_topics.scope.recall import ScopeQuote
    from langgraph_topics.services import TopicServices
    from langgraph_topics.settings import Settings
    from langgraph_topics.state.records import StoredMessage

log = logging.getLogger(__name__)

TOPICS_PER_THREAD = 2
"""Candidates copied from one thread (the turn reads the best ``Settings.scope_topics`` of all)."""
QUESTION_ID = "scope-question"
"""Id of the question as the topic window is shown it (not a message of any thread)."""


class ScopeTopic(TypedDict):
    """What the topic window made of one topic of another thread of the user."""

    thread_id: str
    """The thread it belongs to, as the user names it."""
    topic_id: str
    name: str
    summary: str
    """The window's summary for the question ('' when it wrote none)."""
    relevance: float
    """The window's relevance score in [0, 1]."""
    quotes: list[ScopeQuote]
    """The messages it referenced, in its order (``topic_id`` set; ``similarity`` the
    evidence's cosine where the evidence quoted them, else 0)."""


@dataclass(frozen=True)
class ForeignTopic:
    """A topic of another thread, copied under that thread's files lock, to be read."""

    thread_id: str
    info: TopicInfo
    messages: list[StoredMessage]
    similarity: float
    """Cosine of its best quote (or its brief) with the question: how the turn ranks them."""
    quoted: dict[str, float]
    """Cosine with the question of each of its messages the evidence quoted."""


def reads_topics(services: TopicServices) -> bool:
    """Whether other threads' topics are read by a model (the native window reads evidence)."""
    return services.settings.scope_topics > 0 and not uses_evidence(services.roles.topic_window)


class PendingTopics:
    """The other threads' topics being read, in parallel, from before the turn's graph ran."""

    def __init__(self, parts: Sequence[Future[ScopeTopic | None]], settings: Settings) -> None:
        self._parts = list(parts)
        self._settings = settings

    @property
    def count(self) -> int:
        """How many topics are read."""
        return len(self._parts)

    def done(self) -> bool:
        """Whether every reading has ended."""
        return all(part.done() for part in self._parts)

    def ready(self) -> list[ScopeTopic]:
        """The readings ended by now that found their topic relevant (no wait)."""
        return [r for part in self._parts if part.done() and (r := part.result()) is not None]

    def result(self) -> list[ScopeTopic]:
        """Every reading's outcome, waiting for those still running.

        All of them get the turn's deadline (or a request's time, ``model_timeout_seconds``,
        without one) together; a reading still running then is left out.
        """
        wait = self._settings.turn_deadline_seconds or self._settings.model_timeout_seconds
        ends_at = time.monotonic() + wait
        for part in self._parts:
            try:
                part.result(timeout=max(0.0, ends_at - time.monotonic()))
            except FutureTimeout:
                log.warning("user scope: a topic of another thread was not read in time")
        return self.ready()


Searcher = Callable[
    [str, datetime | None, datetime | None], tuple[list["ScopeQuote"], PendingTopics | None]
]
"""Searches the user's other threads for a query, sent between two times (either None: no
bound), now (``recall.ThreadsSearch.now``)."""


class ScopeReading(Sequence["ScopeQuote"]):
    """What a user-scope turn found in the user's other threads.

    A sequence of the evidence's quotes, best first (what ``recall_from_threads`` returns),
    with the topic window's readings of their best topics, which may still be running. With a
    ``searcher``, the turn's model may search the other threads again (``activate_topic``):
    what that finds joins this reading, first.
    """

    def __init__(
        self,
        quotes: Sequence[ScopeQuote],
        topics: PendingTopics | None = None,
        *,
        searcher: Searcher | None = None,
    ):
        self._quotes = list(quotes)
        self._topics = [topics] if topics is not None else []
        self._searcher = searcher
        self._lock = threading.Lock()

    @overload
    def __getitem__(self, index: int) -> ScopeQuote: ...
    @overload
    def __getitem__(self, index: slice) -> list[ScopeQuote]: ...
    def __getitem__(self, index: int | slice) -> ScopeQuote | list[ScopeQuote]:
        return self._quotes[index]

    def __len__(self) -> int:
        return len(self._quotes)

    def __bool__(self) -> bool:
        """Whether it brings anything: a quote, or a topic being read (it may find none)."""
        return bool(self._quotes) or bool(self._topics)

    def __iter__(self) -> Iterator[ScopeQuote]:
        return iter(self._quotes)

    @property
    def searches(self) -> bool:
        """Whether the other threads can be searched again (``search``)."""
        return self._searcher is not None

    def search(
        self, query: str, since: datetime | None = None, until: datetime | None = None
    ) -> tuple[int, int]:
        """Search the other threads for ``query`` now; (quotes added, topics being read).

        ``since``/``until``: only messages sent in that period. Nothing without a searcher
        (thread scope, a reading handed in by a caller). A thread whose files lock is not free
        now is left out (one warning): the turn holds its own thread's locks and never waits
        on another's. A search that fails (the user's registry unreadable) finds nothing, with
        one warning: the model's request degrades, never the turn (invariant 4).
        """
        if self._searcher is None or not query.strip():
            return 0, 0
        try:
            quotes, pending = self._searcher(query, since, until)
        except Exception as error:
            log.warning("user scope: the other threads not searched: %s", first_line(error))
            return 0, 0
        with self._lock:
            held = {q["message"]["id"] for q in self._quotes}
            fresh = [q for q in quotes if q["message"]["id"] not in held]
            self._quotes = [*fresh, *self._quotes]  # what the model asked for first
            if pending is not None:
                self._topics.append(pending)
        return len(fresh), pending.count if pending is not None else 0

    def topics_done(self) -> bool:
        """Whether the topic window's readings have ended (or none was started)."""
        return all(pending.done() for pending in self._topics)

    def topics(self) -> list[ScopeTopic]:
        """The topic window's readings that found their topic relevant, waiting for them.

        For a caller that wants them all (``TopicMemory.chat(..., scope_quotes=reading)``
        after this has them in every window); none when no model reads topics.
        """
        return _best_first(r for pending in list(self._topics) for r in pending.result())

    def ready_topics(self) -> list[ScopeTopic]:
        """The readings ended by now that found their topic relevant: what an assembly takes.

        It never waits: a reading the turn's own topic windows did not outlast stays out of
        that window (a later model call of the same turn, a tool round, takes it).
        """
        return _best_first(r for pending in list(self._topics) for r in pending.ready())


NO_READING = ScopeReading([])
"""A run reading no other thread (thread scope): shared, as nothing ever changes it (only a
reading with a searcher takes more quotes)."""


def _best_first(readings: Iterable[ScopeTopic]) -> list[ScopeTopic]:
    """Each topic once (its best reading), the most relevant first."""
    best: dict[tuple[str, str], ScopeTopic] = {}
    for reading in readings:
        key = (reading["thread_id"], reading["topic_id"])
        if key not in best or reading["relevance"] > best[key]["relevance"]:
            best[key] = reading
    return sorted(best.values(), key=lambda t: -t["relevance"])


def as_reading(quotes: Sequence[ScopeQuote]) -> ScopeReading:
    """``quotes`` as a reading (a reading as it is: its topics may still be running)."""
    return quotes if isinstance(quotes, ScopeReading) else ScopeReading(quotes)


def start_reading(
    services: TopicServices, candidates: Sequence[ForeignTopic], query: str
) -> PendingTopics | None:
    """Start reading the best ``Settings.scope_topics`` of ``candidates`` for ``query``.

    None when there is none to read.
    """
    limit = services.settings.scope_topics
    chosen = sorted(candidates, key=lambda c: -c.similarity)[:limit]
    if not chosen:
        return None
    question: StoredMessage = {
        "id": QUESTION_ID,
        "role": "user",
        "content": query,
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    window = services.roles.topic_window
    executor = ThreadPoolExecutor(max_workers=len(chosen), thread_name_prefix="scope-topic")
    try:
        parts = [
            executor.submit(_read_topic, window, services.settings, topic, question)
            for topic in chosen
        ]
    finally:
        executor.shutdown(wait=False)  # its threads end with their reading
    return PendingTopics(parts, services.settings)


def _read_topic(
    window: TopicWindow, settings: Settings, topic: ForeignTopic, question: StoredMessage
) -> ScopeTopic | None:
    """One topic read against the question (None: not relevant, or the reading failed)."""
    view = shown_unsplit([question], settings)
    shown = topic_as_shown(topic.messages, view, settings)
    try:
        with settings_deadline(settings, "chat"):
            verdict = window.evaluate(topic.info, shown, list(view.shown))
    except Exception as error:  # invariant 4: one topic left out, never the turn
        log.warning(
            "user scope: topic %s of thread %r not read for this turn: %s",
            topic.info["id"],
            topic.thread_id,
            first_line(error),
        )
        return None
    score = clamp_score(verdict["relevance_score"])
    if score < settings.reference_threshold:
        return None
    relevance = reference_relevance(verdict, score)
    held = {m["id"]: m for m in topic.messages}
    summary = bounded_summary(verdict["summary"], settings)
    quotes: list[ScopeQuote] = [
        {
            "thread_id": topic.thread_id,
            "message": held[i],
            "relevance": relevance[i],
            "similarity": topic.quoted.get(i, 0.0),
            "topic_id": topic.info["id"],
        }
        for i in dict.fromkeys(verdict["referenced_message_ids"])
        if i in held and quotable(held[i])  # never half of a tool call (invariant 8)
    ]
    return {
        "thread_id": topic.thread_id,
        "topic_id": topic.info["id"],
        "name": topic.info["name"],
        "summary": summary.strip(),
        "relevance": score,
        "quotes": quotes,
    }
