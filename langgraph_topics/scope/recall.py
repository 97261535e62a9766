"""Read a user's other threads for a question: the cross-thread half of a user-scope turn.

Runs before the turn takes its own thread's locks: each other thread is read under its own
files lock (the reader's lock: a writer appending waits for it, never the other way round),
one thread at a time and never for writing, so two threads of one user taking turns at once
never wait on each other's locks. A search the turn's model asks for later (``activate_topic``,
``ThreadsSearch.now``) runs while the turn holds its own locks, so it takes another thread's
only if it is free at that moment. A thread that cannot be read (busy past the lock timeout, a
damaged store) is left out of the turn with one warning line; the turn goes on. Each thread
is read as its newest checkpoint sees it (its branch's topic ranges, its unsplit messages),
with the evidence search a turn runs on its own thread (``retrieval/history_search.py``: no
model call, nothing written).

Each thread's evidence relevance is relative to that thread (its best message scores high
however weak it is), so a hit is kept only when its text is close to the question by the
embedder's cosine (``MIN_SIMILARITY``), and the threads' hits are ranked by that cosine, which
means the same in every thread. Tool calls and tool results are left out: a quote from another
thread is a plain message, never half of a call and its result (invariant 8).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, NotRequired, Protocol, TypedDict

from langgraph_topics.errors import first_line
from langgraph_topics.retrieval.history_search import SearchHit, search_history
from langgraph_topics.roles.topic_info import topic_info
from langgraph_topics.scope.quotable import quotable
from langgraph_topics.scope.threads import local_thread_id, scoped_thread_id
from langgraph_topics.scope.topic_reading import (
    TOPICS_PER_THREAD,
    ForeignTopic,
    PendingTopics,
    ScopeReading,
    reads_topics,
    start_reading,
)
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.state.working_set import stored_view

if TYPE_CHECKING:
    from langgraph_topics.scope.registry import ScopeRegistry
    from langgraph_topics.services import ThreadStores, TopicServices
    from langgraph_topics.settings import Settings

log = logging.getLogger(__name__)

PER_THREAD = 8
"""Best messages read from each other thread."""
QUOTES = 12
"""Candidates handed to the window at most, best first (it quotes what fits its share)."""
MIN_SIMILARITY = 0.3
"""Cosine a message of another thread needs with the question to be quoted. With the
default multilingual USE, a sentence stating what the question asks about scores 0.35–0.5,
an unrelated one (or a reply such as "tell me more") under 0.2."""


class ScopeQuote(TypedDict):
    """A message of another thread of the user, found for this turn's question."""

    thread_id: str
    """The thread it was said in, as the user names it."""
    message: StoredMessage
    relevance: float
    """Its relevance to the question in [0, 1], within its own thread (the evidence search's)."""
    similarity: float
    """Cosine of its text and the question (comparable across threads)."""
    topic_id: NotRequired[str]
    """The other thread's topic whose reading by the topic window named it, when that is how
    it was found (``topic_reading.py``)."""


class UserThreads(Protocol):
    """Where a user's threads are read from.

    ``TopicMemory``, or a graph run's stores and checkpointer (``scope.graph_run``).
    """

    @property
    def settings(self) -> Settings:
        """The settings (``scope_threads``)."""
        ...

    @property
    def services(self) -> TopicServices:
        """The services whose stores hold the threads (and whose embedder compares them)."""
        ...

    @property
    def scope_registry(self) -> ScopeRegistry:
        """Which threads each user has, the most recently active first."""
        ...

    def exists(self, thread_id: str) -> bool:
        """Whether the thread holds anything (looking creates nothing)."""
        ...

    def reading(self, thread_id: str, timeout: float | None = None) -> AbstractContextManager[None]:
        """The thread's files lock (a reader's), so that state and stores are read as one.

        ``timeout``: seconds to wait (None: the lock timeout; 0: only if free now).
        """
        ...

    def state(self, thread_id: str) -> dict[str, Any]:
        """The values of the thread's newest checkpoint (empty when none can be read)."""
        ...


def recall_from_threads(
    memory: UserThreads,
    user_id: str,
    thread_id: str,
    query: str,
    recent: Sequence[str] | None = None,
) -> ScopeReading:
    """The messages of user ``user_id``'s other threads that best answer ``query``.

    Only the ``Settings.scope_threads`` most recently active other threads are read: a
    thread read costs the turn its evidence search (``bench scope``), so the turn's cost stops
    growing with the user's thread count. Where the topic window is a model, the topics
    holding the best quotes are copied too, and their reading starts before this returns
    (``topic_reading.py``): the quotes, best first, with those readings.

    Args:
        memory: The memory holding the user's threads (or a graph run's view of them).
        user_id: The user (checked by the caller).
        thread_id: The thread of the turn, as the user names it: it is not read here.
        query: The turn's question.
        recent: The user's threads, the most recently active first, when the caller has them
            (``ScopeRegistry.enter``); read from the registry otherwise.
    """
    search = ThreadsSearch(memory, user_id, thread_id, recent)
    if not query.strip():
        return ScopeReading([], searcher=search.now)
    quotes, pending = search(query)
    return ScopeReading(quotes, pending, searcher=search.now)


@dataclass
class ThreadsSearch:
    """The search of a user's other threads for one turn: the question's, then the model's.

    The threads are chosen once (the ``Settings.scope_threads`` most recently active others,
    read from the registry the first time they are needed).
    """

    memory: UserThreads
    user_id: str
    thread_id: str
    recent: Sequence[str] | None = None

    def __call__(
        self,
        query: str,
        timeout: float | None = None,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> tuple[list[ScopeQuote], PendingTopics | None]:
        """The best quotes for ``query``, best first, and their topics' readings (started).

        ``timeout``: how long each thread's files lock is waited for (None: the lock timeout).
        ``since``/``until``: only messages sent in that period (``search_memory``'s bounds).
        """
        memory = self.memory
        if self.recent is None:
            self.recent = memory.scope_registry.recent(self.user_id)
        others = [t for t in self.recent if t != self.thread_id][: memory.settings.scope_threads]
        with_topics = reads_topics(memory.services)
        found: list[ScopeQuote] = []
        candidates: list[ForeignTopic] = []
        for other in others:
            try:
                quotes, topics = _read_thread(
                    memory,
                    scoped_thread_id(self.user_id, other),
                    query,
                    with_topics=with_topics,
                    timeout=timeout,
                    since=since,
                    until=until,
                )
            except Exception as error:  # invariant 4: one thread unread, never the turn lost
                log.warning(
                    "user scope: thread %r not read for this turn: %s", other, first_line(error)
                )
                continue
            found.extend(quotes)
            candidates.extend(topics)
        found.sort(key=lambda q: -q["similarity"])
        return found[:QUOTES], start_reading(memory.services, candidates, query)

    def now(
        self, query: str, since: datetime | None = None, until: datetime | None = None
    ) -> tuple[list[ScopeQuote], PendingTopics | None]:
        """``__call__`` taking only the locks that are free now (a search inside a turn).

        A turn holds its own thread's locks; another thread's turn may hold its own and be
        searching this one: neither waits for the other.
        """
        return self(query, timeout=0, since=since, until=until)


def _read_thread(
    memory: UserThreads,
    stored_id: str,
    query: str,
    *,
    with_topics: bool,
    timeout: float | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> tuple[list[ScopeQuote], list[ForeignTopic]]:
    """The best plain messages of one thread for ``query`` (none when it holds nothing yet).

    With ``with_topics``, also a copy of the topics worth the topic window's reading
    (``_topics``), taken under the same lock as the messages. ``timeout``: how long the
    thread's files lock is waited for (``ThreadBusyError`` past it).
    """
    if not memory.exists(stored_id):
        return [], []
    with memory.reading(stored_id, timeout):
        values = memory.state(stored_id)
        stores = memory.services.branch_stores(stored_id, values)
        working = stored_view(values.get("messages", []))
        hits = search_history(
            memory.services,
            stores,
            working,
            values.get("topics") or {},
            query,
            limit=PER_THREAD,
            since=since,
            until=until,
        )
        held = {m["id"]: m for m in working}
        wanted = [h["message_id"] for h in hits if h["message_id"] not in held]
        messages = {**stores.topic_store.get_messages(wanted), **held}
        quotes = _quotes(memory, stored_id, query, hits, messages)
        if not with_topics:
            return quotes, []
        holders = {h["message_id"]: h["topic_id"] for h in hits if h["topic_id"] is not None}
        topics = _topics(stores, values.get("topics") or {}, stored_id, query, quotes, holders)
    return quotes, topics


def _topics(
    stores: ThreadStores,
    registered: Mapping[str, Any],
    stored_id: str,
    query: str,
    quotes: Sequence[ScopeQuote],
    holders: Mapping[str, str],
) -> list[ForeignTopic]:
    """The thread's topics worth the topic window's reading, best first, copied.

    The topics holding its quotes, and the topic its index finds by brief (the index window's
    search, no model call) when close enough to the question, even where no message of it
    was: ``TOPICS_PER_THREAD`` at most, ranked by their best quote's cosine or their brief's.
    ``holders``: the topic of each message the search found split (its hits say).
    """
    quoted: dict[str, dict[str, float]] = {}
    for quote in quotes:
        topic_id = holders.get(quote["message"]["id"])
        if topic_id is not None:
            quoted.setdefault(topic_id, {})[quote["message"]["id"]] = quote["similarity"]
    closeness = {topic_id: max(found.values()) for topic_id, found in quoted.items()}
    for topic_id, similarity in stores.topic_index.search(query, k=1):
        if similarity >= MIN_SIMILARITY:
            closeness[topic_id] = max(closeness.get(topic_id, 0.0), round(similarity, 4))
    topics: list[ForeignTopic] = []
    for topic_id, similarity in sorted(closeness.items(), key=lambda kv: -kv[1]):
        if len(topics) == TOPICS_PER_THREAD:
            break
        status = (registered.get(topic_id) or {}).get("status", "active")
        try:
            info = topic_info(stores.topic_store, topic_id, status)
            messages = list(stores.topic_store.messages(topic_id))
        except KeyError:  # a topic file removed by hand (or an index ahead of it): left out
            continue
        if not messages:  # divided into subtopics: its messages are theirs
            continue
        topics.append(
            ForeignTopic(
                thread_id=local_thread_id(stored_id),
                info=info,
                messages=messages,
                similarity=similarity,
                quoted=quoted.get(topic_id, {}),
            )
        )
    return topics


def _quotes(
    memory: UserThreads,
    stored_id: str,
    query: str,
    hits: Sequence[SearchHit],
    messages: dict[str, StoredMessage],
) -> list[ScopeQuote]:
    """The hits that are plain messages close enough to ``query``, in the hits' order."""
    plain = [
        (hit, messages[hit["message_id"]])
        for hit in hits
        if hit["message_id"] in messages and quotable(messages[hit["message_id"]])
    ]
    if not plain:
        return []
    vectors = memory.services.embedder.embed([query, *(m["content"] for _, m in plain)])
    question = vectors[0]
    quotes: list[ScopeQuote] = []
    for (hit, message), vector in zip(plain, vectors[1:], strict=True):
        similarity = float(sum(a * b for a, b in zip(question, vector, strict=True)))
        if similarity >= MIN_SIMILARITY:
            quotes.append(
                {
                    "thread_id": local_thread_id(stored_id),
                    "message": message,
                    "relevance": hit["relevance"],
                    "similarity": round(similarity, 4),
                }
            )
    return quotes


def quoted_threads(quotes: Sequence[ScopeQuote]) -> list[str]:
    """The threads ``quotes`` come from, each once, in the order first quoted."""
    return list(dict.fromkeys(q["thread_id"] for q in quotes))
