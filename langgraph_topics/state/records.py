"""Typed records shared by the state, the stores and the role back ends.

All of them are plain ``TypedDict``s so that they serialise into checkpoints and JSONL files
without custom encoders, and so that Studio shows them as they are.
"""

from __future__ import annotations

from typing import Literal, NotRequired

# typing_extensions' TypedDict: on Python < 3.12 pydantic (and so Studio's schema view) rejects
# typing.TypedDict.
from typing_extensions import TypedDict

from langgraph_topics.summaries.card import SummaryCard

Role = Literal["user", "assistant", "tool", "system"]
TopicStatus = Literal["active", "dormant", "archived", "split"]
"""``split``: divided into subtopics (seed 000 §7: 拆分); such a topic holds no messages of its
own and is never read itself, its children are."""


class StoredMessage(TypedDict):
    """One conversation message as the topic store keeps it (one JSONL line)."""

    id: str
    """The message id; unique across the whole thread."""
    role: Role
    content: str
    """The message text (the full text: stores never keep previews)."""
    name: NotRequired[str]
    timestamp: NotRequired[str]
    """ISO-8601 time the message was sent, when known."""
    tool_calls: NotRequired[list[dict[str, object]]]
    """For an assistant message that called tools: the calls, as LangChain ``ToolCall`` dicts."""
    tool_call_id: NotRequired[str]
    """For a tool result: the call it answers."""


class TopicMeta(TypedDict):
    """What the topic store knows about a topic besides its messages."""

    id: str
    name: str
    brief: str
    """About 1 KB describing the topic: its activation fingerprint (seed 000 §4.6)."""
    parent_id: str | None
    created_at: str
    updated_at: str
    message_count: int
    file: str
    """Path of the topic's JSONL file, relative to the thread's data directory."""
    brief_card: NotRequired[SummaryCard]
    """The brief as a structured card citing its messages (seed 001 T3); topics briefed before
    cards existed have none."""


class SubtopicPart(TypedDict):
    """One subtopic a split of a large topic makes: its name, brief and messages."""

    name: str
    brief: str
    message_ids: list[str]
    """Ids of the parent's messages it takes, each in exactly one part."""


class TopicUsage(TypedDict, total=False):
    """How a topic has been used: the counters and user signals of its memory score.

    Sparse on purpose (it rides in every checkpoint): a counter still at zero, an unset pin and
    an unset rating are left out, so a topic never used takes no room at all
    (``langgraph_topics.scoring``).
    """

    recalled: int
    """Turns that woke the topic from dormancy through the index (a recall cue, the
    responder's ``activate_topic`` call, weak results)."""
    searched: int
    """Index searches that found the topic among their candidates (search hits)."""
    referenced: int
    """Turns whose main window quoted the topic's messages."""
    updated: int
    """Chat turns whose split added messages to the topic."""
    pinned: bool
    """The user pinned the topic (``TopicMemory.pin``)."""
    rating: int
    """The user's rating, 1 to 5 (``TopicMemory.rate``)."""


class TopicRecord(TypedDict):
    """A topic as the graph state tracks it (kept small: it is checkpointed every turn)."""

    id: str
    name: str
    status: TopicStatus
    parent_id: str | None
    scores: list[float]
    """The last relevance scores, newest last (at most the sliding-window size)."""
    created_at: str
    last_active_at: str
    """When the topic was last activated or scored at or above the activation threshold."""
    message_count: int
    low_rounds: NotRequired[int]
    """Consecutive scored rounds the topic spent at risk of dormancy (left out at zero); it
    falls dormant only once this reaches ``Settings.dormancy_rounds`` (seed 000 §15.6). A split
    adding messages to the topic starts the count again."""
    usage: NotRequired[TopicUsage]
    """Usage counters and user signals (absent: never used)."""
    children: NotRequired[list[str]]
    """A ``split`` topic's subtopics, in conversation order (``langgraph_topics.subtopics``)."""


class ArchivedTopic(TypedDict):
    """A topic the review archived: its compressed summary, filed by month (seed 000 §4.8, §9).

    The topic's messages stay in its file (invariant 1: ``check`` and ``transcript`` see them);
    this is what an archive lists and what a date query finds.
    """

    topic_id: str
    name: str
    month: str
    """``YYYY-MM`` of the topic's newest message: where it is filed (``topics/archived/``)."""
    first_day: str | None
    last_day: str | None
    """The days of its first and newest messages (``YYYY-MM-DD``), when they are dated."""
    archived_at: str
    reason: str
    """Which criterion archived it (``dormant 12 days``, ``one-off question``, ``by request``)."""
    message_count: int
    brief: str
    summary: SummaryCard
    """The compressed summary: a card of all its messages, the brief as its text (seed 001 T3)."""


class TopicResult(TypedDict):
    """One topic window's output for this turn (seed 000 §4.2)."""

    topic_id: str
    name: str
    brief: str
    file: str
    relevance_score: float
    referenced_message_ids: list[str]
    """Empty when the score is under the reference threshold (0.3)."""
    summary: str
    """Empty when the score is under the reference threshold (0.3)."""
    reference_relevance: NotRequired[list[float]]
    """Relevance in [0, 1] of each referenced message, aligned with the ids: what the
    assembler weighs quotes of different topics by."""
    summary_card: NotRequired[SummaryCard]
    """The summary as a structured card whose facts cite message ids (seed 001 T3); present
    whenever ``summary`` is. The main window shows ``summary`` (the card's ``text``) and, as the
    budget allows, the card's decisions with their reasons, open items and files as lines of
    their own (``prompts/card_lines.py``)."""
    round: int
    """Which pass of this turn produced it: 0 for the first fan-out, n for the n-th activation."""
    window: NotRequired[Literal["read", "reused", "native"]]
    """How a governed topic window produced it (``activation/governor.py``): a model call
    (``read``), the previous result of an unchanged topic and evidence (``reused``), or, for
    a topic the governor gave no model call, the native score of the turn's evidence alone
    (``native``: a score for grey activation, nothing quoted). Absent for a back end the
    governor does not govern (the native one)."""
    input_tokens: NotRequired[int]
    """The governor's estimate of the call's input tokens (0 for a reused result)."""


class SectionTokens(TypedDict):
    """Tokens per section of the assembled main window."""

    system: int
    topics: int
    unsplit: int
    recent: int
    workflow: NotRequired[int]
    """The workflow block on top of the system prompt (seed 001 T4), when the thread has one."""
    search: NotRequired[int]
    """The responder's ``search_memory`` calls and their replies, when it searched this turn."""
    scope: NotRequired[int]
    """Quotes from the user's other threads (user scope), when any entered the window."""


class TrimRecord(TypedDict):
    """Something the assembler left out or shortened to stay within the budget."""

    kind: Literal[
        "topic_summary",
        "topic_brief",
        "topic_card_line",
        "referenced_message",
        "topic_result",
        "unsplit_message",
        "recent_truncated",
        "workflow_block",
        "search_reply",
    ]
    id: str
    tokens: int


class SearchExchange(TypedDict):
    """One ``search_memory`` call of the responder and the reply the window gives it."""

    call_id: str
    args: dict[str, str]
    """The call's arguments as the responder sent them (query, since, until), cleaned."""
    reply: str
    """The tool's reply: the hits' original messages, dated and fenced, or one line saying
    why there are none."""
    message_ids: list[str]
    """The conversation messages the reply quotes (each also in ``message_ids``)."""


class ScopeQuoteRef(TypedDict):
    """A message of another thread of the user quoted in this window (user scope)."""

    thread_id: str
    """The thread it was said in, as the user names it."""
    message_id: str


class ScopeTopicRef(TypedDict):
    """A topic of another thread of the user whose reading entered this window (user scope)."""

    thread_id: str
    """The thread it belongs to, as the user names it."""
    topic_id: str


class AssembledContext(TypedDict):
    """The main window of this turn, as sent to the responder."""

    messages: list[StoredMessage]
    """The chat part of the window: unsplit messages, then the recent ones, in order."""
    referenced_messages: list[StoredMessage]
    """Split messages quoted by topic results (rendered in the system prompt), each once."""
    message_ids: list[str]
    """Ids of every conversation message in the window (referenced and chat), each once."""
    recent_ids: list[str]
    """Ids of the last ``keep_recent`` messages, all of which are in the window."""
    system_prompt: str
    """The rendered system prompt, topic results included."""
    tokens: int
    budget: int
    sections: SectionTokens
    topic_ids: list[str]
    """Topics whose results made it into the window, highest score first."""
    trimmed: list[TrimRecord]
    """The most valuable pieces that gave way to the budget (and shortened recent messages)."""
    given_way: NotRequired[int]
    """How many candidate pieces gave way in all."""
    namespace_refs: NotRequired[list[str]]
    """References of large tool results in the window that the responder may read this turn
    (``read_namespace``); absent when there are none."""
    namespace_read: NotRequired[list[str]]
    """References shown in full in this window (read this turn); absent when none."""
    alternating: NotRequired[bool]
    """Whether the chat part opens with a user message and is sent alternating (messages of
    one role in a row joined: ``Settings.alternating_roles``); absent when not."""
    can_search: NotRequired[bool]
    """Whether the responder may still call ``search_memory`` this turn (a chat turn of a
    thread with topics, a search round left); absent when not."""
    searches: NotRequired[list[SearchExchange]]
    """The responder's ``search_memory`` calls this turn, each with its reply, sent after the
    chat part as a tool call and its result; absent when it did not search."""
    scope_quotes: NotRequired[list[ScopeQuoteRef]]
    """Messages of the user's other threads quoted at the end of the system prompt (user
    scope), in the order they were sent; absent when none."""
    scope_topics: NotRequired[list[ScopeTopicRef]]
    """Topics of the user's other threads the topic window read for this turn whose summary or
    named messages entered the window (user scope, a model window); absent when none."""


class TurnEvent(TypedDict):
    """Something notable that happened this turn (split, activation, dormancy, recall cue…)."""

    kind: Literal[
        "split",
        "topic_created",
        "activated",
        "dormant",
        "recall_cue",
        "date_query",
        "index_search",
        "trimmed",
        "reconciled",
        "degraded",
        "rebriefed",
        "merged",
        "archived",
        "restored",
        "subtopics",
        "oversized",
        "skipped",
        "kept",
        "digested",
        "memory_search",
    ]
    detail: str
    topic_ids: NotRequired[list[str]]
    reason: NotRequired[str]


class WindowDecision(TypedDict):
    """What the governor decided for one topic window this turn (``activation/governor.py``)."""

    decision: Literal["read", "reuse", "skip"]
    reason: NotRequired[str]
    """Why a topic is skipped: ``out_of_reach``, ``under_floor``, ``native_low``,
    ``reads_cap``, ``input_cap``, ``max_active``."""
    native_score: NotRequired[float]
    """A skipped topic's score by the native reading of the turn's evidence: its score this
    turn (grey activation keeps working), with nothing quoted."""
    detail: NotRequired[str]
    """The reason in words, with its numbers (the tuning log's and the event's text)."""
    fingerprint: NotRequired[str]
    """The topic and the question's evidence for it, hashed: a result is reused only for
    the same fingerprint."""
    input_tokens: NotRequired[int]
    """The estimated input tokens of the call."""


class EstimateRecord(TypedDict):
    """Step 0 of a turn: the expected main-window size before anything is split."""

    system: int
    topics: int
    """Expected topic-result tokens (what the previous turn's results took)."""
    messages: int
    """Unsplit and recent messages, the new one included."""
    total: int
    budget: int
    share: float
    split: bool
    available: NotRequired[int]
    """``budget - system`` when the split rule is seed 001's dynamic one."""


class MergeRecord(TypedDict):
    """Two topics a review merged: ``retired``'s messages are ``into``'s since."""

    into: str
    retired: str
    similarity: float
    shared_keywords: list[str]


class ArchiveRecord(TypedDict):
    """A topic archived, by a review's criteria or by request."""

    topic_id: str
    reason: str
    month: str


class KeptRecord(TypedDict):
    """A topic the archive criteria picked that a review kept, and why."""

    topic_id: str
    reason: str


class ReviewRecord(TypedDict):
    """The last review of the thread (docs/review.md)."""

    at: str
    """The time it judged by (``--now``, else when it ran)."""
    reviewed: dict[str, int]
    """Message count of every topic it saw: a topic whose count differs was touched since."""
    rebriefed: list[str]
    merged: list[MergeRecord]
    archived: list[ArchiveRecord]
    kept: NotRequired[list[KeptRecord]]
    """Archive candidates kept dormant: related to the current discussion."""
    digested: NotRequired[list[str]]
    """Topics whose card got a new or rewritten day digest."""


class ThreadBefore(TypedDict):
    """What a context query found, to put back when it ends: the thread stays as it was."""

    message_ids: list[str]
    """The query's own messages, which leave the working set again."""
    topics: dict[str, TopicRecord]
    total_messages: int
    last_seen_id: str | None
    turn: int


class AskedPeriod(TypedDict):
    """A period a date query asks about: ISO days, both included, and the words that said it."""

    start: str
    end: str
    said: str


class ActivationRequest(TypedDict):
    """A request to search the topic index and activate what it finds."""

    query: str
    reason: Literal["tool_call", "recall_cue", "weak_results", "date_query"]
    deep: bool
    """Deep search: more candidates, looser threshold (recall cues, date queries)."""
    periods: NotRequired[list[AskedPeriod]]
    """A date query's periods: the dormant and archived topics discussed in them are offered
    (seed 000 §4.8: a date query is one of the explicit requests that reach the archive)."""


class MemorySearchRequest(TypedDict):
    """A ``search_memory`` call of the responder: what to look for, between which dates."""

    query: str
    """The query, cleaned (one line, no control characters), kept up to 301 characters."""
    query_chars: NotRequired[int]
    """The length of a query too long to search (it is refused, by its length)."""
    since: NotRequired[str]
    until: NotRequired[str]
    """``since``/``until``: ISO dates as the model wrote them (checked by the search)."""


class MemorySearchHit(TypedDict):
    """One message a search of the responder found (its text is read from the stores)."""

    message_id: str
    topic_name: str
    """The name of the topic holding it ('' while it is not split)."""


class MemorySearchRecord(TypedDict):
    """A search the responder ran this turn and what it found (ids, best first)."""

    call_id: str
    request: MemorySearchRequest
    hits: list[MemorySearchHit]
    problem: NotRequired[Literal["empty", "long", "date", "failed"]]
    """Why nothing was searched: an empty or oversized query, a bad date, a failing store."""
    problem_detail: NotRequired[str]
    """The problem's particular: the query's length, the date argument, the error."""
