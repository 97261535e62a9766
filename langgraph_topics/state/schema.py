"""The graph state: the main window's working set, never the whole history."""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

# typing_extensions' TypedDict: on Python < 3.12 pydantic (and so Studio's schema view) rejects
# typing.TypedDict.
from typing_extensions import TypedDict

from langgraph_topics.state.records import (
    ActivationRequest,
    AssembledContext,
    EstimateRecord,
    MemorySearchRecord,
    MemorySearchRequest,
    ReviewRecord,
    StoredMessage,
    ThreadBefore,
    TopicRecord,
    TopicResult,
    TurnEvent,
    WindowDecision,
)
from langgraph_topics.state.reducers import append_events, merge_oversized, merge_topic_results
from langgraph_topics.workflow.records import ActivePath

Mode = Literal["chat", "import", "context", "assemble", "split"]


class InputState(TypedDict):
    """What a caller sends: new chat messages (and, for tools, what to do with them)."""

    messages: Annotated[list[AnyMessage], add_messages]
    """New messages of this turn (usually one user message)."""
    mode: NotRequired[Mode | None]
    """``chat`` (default) answers; ``import`` records and splits only; ``context`` shows the
    window a question would get and leaves the thread as it was; ``assemble`` records the
    message and stops at the assembled window (the application's own model answers);
    ``split`` adds no message and writes a split prepared after the last reply
    (``splitting.background``)."""
    read_namespace: NotRequired[list[str] | None]
    """References of stored tool results (``namespace://tool/…``) to show in full in this
    turn's window, once (what an agent's ``read_namespace`` call asked for)."""


class TopicState(InputState, total=False):
    """Everything a turn reads and writes; checkpointed after every step."""

    turn_mode: Mode
    """What this turn does: the input's ``mode`` (``chat`` when absent), read by the first step.

    The input key itself is cleared at once, so a later input without ``mode`` is a chat turn
    again instead of inheriting the mode of an earlier run.
    """
    topics: dict[str, TopicRecord]
    """The topic registry: status, score history, counts (briefs live in the topic store)."""
    total_messages: int
    """Messages ever added to the thread; with the stores it proves none was lost."""
    store_ranges: list[list[int]]
    """The topic-store records of this branch, as ``[start, end)`` sequence-number ranges.

    The store follows the checkpoint: reads see these records only, so a fork or a time travel
    sees its own topics, and what a crash cut short before its checkpoint stays unseen (the
    messages are still in the working set and get split again).
    """
    last_seen_id: str | None
    """Id of the newest message already counted, to tell this turn's new messages apart."""
    last_split_id: str | None
    """Id of the newest message moved into a topic: the next split continues from its unit."""
    turn: int
    """Turn counter (one per run of the graph)."""
    estimate: EstimateRecord
    """Step 0 of this turn."""
    topic_results: Annotated[dict[str, TopicResult], merge_topic_results]
    """This turn's topic window results, keyed by topic id (reset every turn)."""
    context: AssembledContext
    """The assembled main window of this turn."""
    events: Annotated[list[TurnEvent], append_events]
    """What happened this turn (reset every turn)."""
    oversized_topics: Annotated[dict[str, int], merge_oversized]
    """Topics whose window prompt a provider refused as too long, with the topic's tokens then:
    the next split divides them into subtopics (``langgraph_topics.subtopics``)."""
    activation: ActivationRequest | None
    """A pending request to search the index and activate topics."""
    activation_rounds: int
    """How many times this turn went through the activate node."""
    searched: bool
    """Whether the index was searched this turn (the weak-results fallback runs once)."""
    clarify_topics: list[str]
    """Names of candidate topics when a recall cue found only ambiguous matches."""
    new_topic_hints: list[str]
    """User messages the index window confirmed as opening a new subject (seed 000 §3): the
    split that moves one of them starts a new topic with its exchange, then drops the id."""
    namespace_reads: list[str]
    """References the responder read this turn (shown in full in its next window only)."""
    namespace_request: str | None
    """A ``read_namespace`` call of the responder, waiting for the window to show it."""
    memory_search: MemorySearchRequest | None
    """A ``search_memory`` call of the responder, waiting for the search node to run it."""
    memory_searches: list[MemorySearchRecord]
    """The responder's searches this turn and their hits (ids): the next window shows them
    as the calls' replies (reset every turn)."""
    thread_before: ThreadBefore | None
    """Set by a context query: the thread as it was, restored when the query ends."""
    workflow: ActivePath | None
    """The active path of the thread's workflow (seed 001 T4), read at the start of a turn;
    absent for a thread that never had a workflow."""
    review: ReviewRecord
    """What the last review did (the review graph, ``graph/review.py``); absent before one."""
    memory_thread: str
    """The user's thread whose stores hold this thread's topics, when its checkpoints are kept
    under another id: a user-scope run on the application's thread id (``scope/run_scope.py``);
    absent otherwise."""


class TopicWindowTask(TypedDict):
    """What one topic window task reads: which topic, against which messages."""

    thread_id: str
    topic_id: str
    round: int
    store_ranges: NotRequired[list[list[int]] | None]
    """The branch's topic-store records (see ``TopicState.store_ranges``)."""
    unsplit: list[StoredMessage]
    """The messages the topic is read against (the unsplit ones, the new message last)."""
    families: NotRequired[dict[str, str]]
    """Subtopics mapped to the topic they were divided from (their evidence prior's group)."""
    governor: NotRequired[WindowDecision]
    """The governor's decision for this window (absent: read, as the native back end is)."""


class TopicWindowInput(TypedDict):
    """The payload ``Send`` gives the topic window node: its task, under one key.

    Every key of a node's input becomes a channel of the graph, and LangGraph's cost per step
    grows with the channels; the task's six keys at the top cost four channels more.
    """

    window_task: TopicWindowTask
