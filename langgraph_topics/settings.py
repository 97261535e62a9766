"""The settings of one topic memory; every number defaults to the specification's value."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, cast

from typing_extensions import TypedDict

from langgraph_topics.errors import InputError
from langgraph_topics.keywords.continuity import ContinuityRules
from langgraph_topics.review.schedule import parse_review_at

DATA_DIR_ENV = "LANGGRAPH_TOPICS_DATA_DIR"
BUDGET_ENV = "LANGGRAPH_TOPICS_BUDGET"
STRONG_MODEL_ENV = "LANGGRAPH_TOPICS_STRONG_MODEL"
CHEAP_MODEL_ENV = "LANGGRAPH_TOPICS_CHEAP_MODEL"
PROMPT_DIR_ENV = "LANGGRAPH_TOPICS_PROMPT_DIR"
LOCK_TIMEOUT_ENV = "LANGGRAPH_TOPICS_LOCK_TIMEOUT"
STORE_ENV = "LANGGRAPH_TOPICS_STORE"
POSTGRES_URI_ENV = "LANGGRAPH_TOPICS_POSTGRES_URI"
CHROMA_URL_ENV = "LANGGRAPH_TOPICS_CHROMA_URL"
DORMANCY_ROUNDS_ENV = "LANGGRAPH_TOPICS_DORMANCY_ROUNDS"
SCORE_DECAY_DAYS_ENV = "LANGGRAPH_TOPICS_SCORE_DECAY_DAYS"
ARCHIVE_AFTER_DAYS_ENV = "LANGGRAPH_TOPICS_ARCHIVE_AFTER_DAYS"
MERGE_SIMILARITY_ENV = "LANGGRAPH_TOPICS_MERGE_SIMILARITY"
SUBTOPIC_LIMIT_ENV = "LANGGRAPH_TOPICS_SUBTOPIC_LIMIT_TOKENS"
DEFAULT_SUBTOPIC_LIMIT_TOKENS = 4000
"""Native size limit of a topic: the window renders a divided topic's family as one block, so
dividing at it keeps the native evidence recall (benchmarks/README §1)."""
CHEAP_CONTEXT_ENV = "LANGGRAPH_TOPICS_CHEAP_CONTEXT_TOKENS"
WINDOW_INPUT_ENV = "LANGGRAPH_TOPICS_TOPIC_WINDOW_INPUT_TOKENS"
WINDOW_SUMMARIES_ENV = "LANGGRAPH_TOPICS_TOPIC_WINDOW_SUMMARIES"
CACHE_BREAKPOINTS_ENV = "LANGGRAPH_TOPICS_CACHE_BREAKPOINTS"
MODEL_TIMEOUT_ENV = "LANGGRAPH_TOPICS_MODEL_TIMEOUT"
TURN_DEADLINE_ENV = "LANGGRAPH_TOPICS_TURN_DEADLINE"
REVIEW_AT_ENV = "LANGGRAPH_TOPICS_REVIEW_AT"
REVIEW_CLOCK_ENV = "LANGGRAPH_TOPICS_REVIEW_CLOCK"
SCOPE_THREADS_ENV = "LANGGRAPH_TOPICS_SCOPE_THREADS"
SCOPE_TOPICS_ENV = "LANGGRAPH_TOPICS_SCOPE_TOPICS"
MEMORY_SCOPE_ENV = "LANGGRAPH_TOPICS_MEMORY_SCOPE"
REVIEW_CLOCKS = ("thread", "wall")
"""What a review ages a thread by (``Settings.review_clock``)."""
DEFAULT_WINDOW_INPUT_TOKENS = 40_000
"""Cheap-model input of one turn's topic windows: about six calls of a full topic (4,000
tokens, ``DEFAULT_SUBTOPIC_LIMIT_TOKENS``) read against an 8,000-token budget's working set."""
STORE_PROFILES = ("embedded", "postgres")
"""Where a memory keeps its threads: ``embedded`` (files and SQLite under ``data_dir``) or
``postgres`` (checkpoints and topics in one PostgreSQL database shared by every worker)."""
POSTGRES_SCHEMES = ("postgres://", "postgresql://")
PLATFORM_STORE_CHOICES = ("", "platform")
"""``LANGGRAPH_TOPICS_STORE`` values leaving a run's topics to the LangGraph platform store when
it has one (``stores.platform_store``); the services' own stores are then the embedded ones."""
FIXED_SYSTEM_TOKENS = 150
"""Room kept for the main window's instructions without any topic: about 90 (English) to 130
(Chinese) tokens with the bundled tokenizer, plus the header of replies quoted before the
first question (``alternating_roles``)."""
SHORTENED_MESSAGE_TOKENS = 5
"""The least a recent message can take: its framing (``MESSAGE_OVERHEAD_TOKENS``) and the
one-token mark its text is shortened to when nothing else fits (``nodes/assemble.py``)."""


def min_budget_tokens(keep_recent: int) -> int:
    """The smallest budget the fixed part of every window fits: instructions, last N messages.

    The last ``keep_recent`` messages always stay (invariant 2), shortened at most to a mark;
    a smaller budget could not be kept (invariant 6), so it is refused when it is set.
    """
    return FIXED_SYSTEM_TOKENS + max(0, keep_recent) * SHORTENED_MESSAGE_TOKENS


MIN_BUDGET_TOKENS = min_budget_tokens(20)
"""The smallest main-window budget accepted with the default ``keep_recent`` (20): 250.

Every window holds the instructions and the last 20 messages; at 200 tokens a Chinese
conversation's 20 shortest messages and instructions took 222, over the budget.
"""
MAX_BUDGET_TOKENS = 100_000_000
"""The largest budget accepted: far past any model's context, and a number every store keeps
(checkpoints serialise integers of at most 64 bits)."""
ROLE_NAMES = ("splitter", "topic_window", "brief_writer", "index_router", "responder")
"""The model roles; ``LANGGRAPH_TOPICS_<ROLE>_MODEL`` sets the model of one of them."""


def _default_data_dir() -> Path:
    return Path(os.environ.get(DATA_DIR_ENV, ".langgraph_topics"))


def _default_budget() -> int:
    raw = os.environ.get(BUDGET_ENV, "8000")
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{BUDGET_ENV} must be a whole number of tokens, got {raw!r}") from None


def _default_lock_timeout() -> float:
    raw = os.environ.get(LOCK_TIMEOUT_ENV, "30")
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{LOCK_TIMEOUT_ENV} must be a number of seconds, got {raw!r}") from None


def _whole_number_from(variable: str, default: int, unit: str) -> int:
    """The whole number in environment ``variable`` (``default`` when unset), one line else."""
    raw = os.environ.get(variable, str(default))
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{variable} must be a whole number of {unit}, got {raw!r}") from None


def _default_dormancy_rounds() -> int:
    return _whole_number_from(DORMANCY_ROUNDS_ENV, 3, "rounds")


def _default_memory_scope() -> Literal["thread", "user"]:
    # Checked with the other fields (``__post_init__``): a bad value is one line naming it.
    return cast(Literal["thread", "user"], os.environ.get(MEMORY_SCOPE_ENV, "thread").strip())


def _default_scope_threads() -> int:
    return _whole_number_from(SCOPE_THREADS_ENV, 8, "threads")


def _default_scope_topics() -> int:
    return _whole_number_from(SCOPE_TOPICS_ENV, 2, "topics")


def _env_number(variable: str, default: float, unit: str) -> float:
    raw = os.environ.get(variable)
    if raw is None or not raw.strip():
        return default
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{variable} must be a number ({unit}), got {raw!r}") from None


def _default_store() -> str:
    raw = (os.environ.get(STORE_ENV) or "").strip().lower()
    if raw in PLATFORM_STORE_CHOICES:
        return "embedded"
    if raw not in STORE_PROFILES:
        raise InputError(
            f"{STORE_ENV} must be one of {', '.join(('platform', *STORE_PROFILES))}, got {raw!r}"
        )
    return raw


def _env_switch(variable: str) -> bool | None:
    """A yes/no variable: ``1``/``true``/``on`` or ``0``/``false``/``off``.

    Unset or ``auto``: None (the setting decides by itself).
    """
    raw = (os.environ.get(variable) or "").strip().lower()
    if raw in ("", "auto"):
        return None
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise InputError(f"{variable} must be 1, 0 or auto, got {raw!r}")


def _default_review_clock() -> str:
    raw = (os.environ.get(REVIEW_CLOCK_ENV) or "thread").strip().lower()
    if raw not in REVIEW_CLOCKS:
        raise InputError(f"{REVIEW_CLOCK_ENV} must be thread or wall, got {raw!r}")
    return raw


def _env_text(variable: str) -> str | None:
    return os.environ.get(variable) or None


def _default_role_models() -> dict[str, str]:
    found = {role: os.environ.get(f"LANGGRAPH_TOPICS_{role.upper()}_MODEL") for role in ROLE_NAMES}
    return {role: model for role, model in found.items() if model}


def _default_prompt_dir() -> Path | None:
    directory = os.environ.get(PROMPT_DIR_ENV)
    return Path(directory) if directory else None


@dataclass(frozen=True)
class Settings:
    """Tunable numbers of the lifecycle (seed 000 §4, §16.2)."""

    data_dir: Path = field(default_factory=_default_data_dir)
    """Where topic files, the topic index and the checkpoint database live."""
    budget_tokens: int = field(default_factory=_default_budget)
    """The main window's token budget; the assembled context never exceeds it."""
    split_trigger: float = 0.7
    """Split first when the estimated main window passes this share of the budget (§4.1)."""
    split_threshold: Literal["budget70", "dynamic"] = "budget70"
    """Which rule triggers a split: ``budget70`` (seed 000 §4.1: the whole estimated window
    over ``split_trigger`` of the budget; the default, which the recall figures were measured
    with) or ``dynamic`` (seed 001 T1: ``available = budget - system tokens``, split when the
    topic results and messages pass ``dynamic_trigger`` of ``available``)."""
    dynamic_trigger: float = 0.6
    """Share of the available budget that triggers a split under ``split_threshold="dynamic"``."""
    keep_recent: int = 20
    min_split_messages: int = 4
    """A split waits until at least this many messages are older than the last ``keep_recent``.

    When the last 20 messages alone pass the trigger (small budgets), every turn would
    otherwise split one exchange at a time, scattering one subject over many tiny topics; the
    few older messages waiting meanwhile stay in the working set and compete for the window
    by value like any other evidence.
    """
    """The last N messages always stay in the main window (§4.3)."""
    split_after_reply: bool = True
    """Whether ``TopicMemory`` splits a chat turn's older messages after its reply, on a
    worker (``splitting.background``: the user never waits for the splitter or the brief
    writers), or, ``False``, before the topic windows read, as seed 000 §4.1 orders it.
    Imports, and graphs run without a memory (Studio, a server), always split in the turn."""
    split_topic_candidates: int = 40
    """At most about this many topics are shown to the splitter: past it, the active ones, the
    one the last split ended on and the nearest others to each exchange (the prompt stays
    bounded however many topics a thread has)."""
    reference_threshold: float = 0.3
    """Under this score a topic result carries no references and no summary (§4.2)."""
    score_window: int = 5
    """Sliding-average window of relevance scores (§16.2)."""
    min_active: int = 3
    default_active: int = 10
    max_active: int = 20
    """The active-topic range and its default (§4.7, §15.5)."""
    dormancy_rounds: int = field(default_factory=_default_dormancy_rounds)
    """Consecutive scored rounds a topic must stay at risk (its sliding average under the
    dormancy threshold, or ranked past ``default_active`` under the activation threshold)
    before it falls dormant: dormancy is conservative, never one low round (seed 000 §4.7,
    §15.6). 3, a majority of the 5-round ``score_window``, by default;
    ``LANGGRAPH_TOPICS_DORMANCY_ROUNDS`` sets it."""
    score_decay_days: float = field(
        default_factory=lambda: _env_number(SCORE_DECAY_DAYS_ENV, 90.0, "days")
    )
    """Days of the memory score's recency decay, ``exp(-days since active / this)`` (seed 004
    §2.4: 90); ``LANGGRAPH_TOPICS_SCORE_DECAY_DAYS`` sets it."""
    summary_soft_limit_chars: int = 2000
    brief_bytes: int = 1024
    """About 1 KB per brief (§4.6)."""
    keyword_limit: int = 5
    """Keywords kept per round for seed 003's continuity score, the longest first."""
    time_decay_factor: float = 0.95
    """Seed 003: keyword continuity left after one hour between two rounds (``0.95 ** hours``)."""
    similarity_threshold: float = 0.7
    """Seed 003: at or above this keyword continuity a round continues its subject (the native
    splitter keeps it in the current topic whatever the embeddings say)."""
    continuity_threshold: float = 0.35
    """Seed 003: under this keyword continuity a round switches subject (the embeddings alone
    decide then); between it and ``similarity_threshold`` it drifts (it stays in the current
    topic unless another topic claims it)."""
    continuity_bonus_for_partial: float = 0.3
    """Seed 003: added to the keyword continuity when the rounds are only weakly associated
    (a shared 2-character piece or its first character: 股票 ~ 股市)."""
    drift_similarity_cap: float = 0.65
    """Seed 003: ceiling of a continuity raised by the bonus, so a weak link alone never makes
    a round ``continuous``."""
    max_activation_rounds: int = 2
    """How many times one turn may loop back through the activate node."""
    deep_search_k: int = 12
    """The fewest candidates read from the index on a deep (recall-cue) search; a normal search
    reads at least half. More are read while the rank quota is large (few active topics:
    ``activation.index_window.candidate_count``)."""
    index_window_tokens: int = 4000
    """Tokens of the recently active topics' briefs and the time index that a model index
    router reads besides the candidates (seed 000 §2: the index window's input); 0: none."""
    language: str = "auto"
    """Prompt language: ``zh``, ``en`` or ``auto`` (detected from the conversation)."""
    tokenizer: str = "o200k_base"
    """Encoding of the bundled tokenizer used when no token counter is injected."""
    prompt_dir: Path | None = field(default_factory=_default_prompt_dir)
    """A directory of ``<language>/<name>.md`` files overriding the packaged prompts."""
    strong_model: str | None = field(default_factory=lambda: _env_text(STRONG_MODEL_ENV))
    """``init_chat_model`` string of the splitter and the responder (none: native back ends)."""
    cheap_model: str | None = field(default_factory=lambda: _env_text(CHEAP_MODEL_ENV))
    """``init_chat_model`` string of the topic window, brief writer and index router."""
    role_models: dict[str, str] = field(default_factory=_default_role_models)
    """Per-role model strings, overriding the tier (keys from ``ROLE_NAMES``)."""
    model_timeout_seconds: float = field(
        default_factory=lambda: _env_number(MODEL_TIMEOUT_ENV, 60.0, "seconds")
    )
    """Timeout of one model request (the client's, for models built from strings; a chat
    model passed in keeps its own). ``LANGGRAPH_TOPICS_MODEL_TIMEOUT`` sets it."""
    turn_deadline_seconds: float = field(
        default_factory=lambda: _env_number(TURN_DEADLINE_ENV, 120.0, "seconds")
    )
    """Time of all the model calls of one run of the graph, retries included (0: no limit):
    a call still running then is given up and its role degrades as on a failure
    (``roles/llm/deadline.py``); in a chat turn the responder keeps the last
    ``model_timeout_seconds`` (at most half) for itself. ``LANGGRAPH_TOPICS_TURN_DEADLINE``."""
    model_retries: int = 2
    """Retries of a request that failed in the provider (timeout, 429, 5xx, connection)."""
    retry_backoff_seconds: float = 1.0
    """First wait before a provider retry; it doubles each time."""
    format_retries: int = 1
    """Retries of a malformed reply, with the error fed back, before the native back end."""
    tuning_log: bool = True
    """Append one line per turn to ``threads/<thread>/tuning.jsonl`` (seed 000 §16)."""
    tool_namespace: bool = True
    """Keep large tool results out of the windows, by reference (seed 001 T2)."""
    namespace_bytes: int = 2048
    namespace_lines: int = 50
    """A tool result over this many bytes (UTF-8) or lines is large (seed 001 T2)."""
    large_tools: tuple[str, ...] = ()
    """Tools whose results are always large, whatever their size. None by default: a small
    result shown by reference costs more tokens than itself and a ``read_namespace`` call
    to read exactly (docs/tool-results.md); ``namespace.SEED_LARGE_TOOLS`` is seed 001 T2's
    list (``read_file``, ``list_directory``, ``grep``, ``diff_files``)."""
    namespace_preview_chars: int = 600
    """Bound of the key-information preview shown with a reference."""
    namespace_cache_bytes: int = 10_000_000
    """Bound of the in-memory LRU of stored tool results (seed 001 T2: 10 MB)."""
    max_namespace_reads: int = 2
    """How many ``read_namespace`` calls one turn may make."""
    lock_timeout_seconds: float = field(default_factory=_default_lock_timeout)
    """How long a write (``chat``, an import) waits for another writer of the same thread
    (another process, or thread) before it fails with ``ThreadBusyError``; a read waits as
    long for the turn being written. ``LANGGRAPH_TOPICS_LOCK_TIMEOUT`` sets it."""
    memory_scope: Literal["thread", "user"] = field(default_factory=_default_memory_scope)
    """What a turn of a user's thread reads (issue 40): ``thread``, its own thread only (as a
    plain thread; the default), or ``user``, also the user's other threads, whose messages
    the window quotes with their thread and date. A thread without a user reads itself only
    either way. ``TopicMemory.user(user_id, scope=...)`` and ``--scope`` override it;
    ``LANGGRAPH_TOPICS_MEMORY_SCOPE`` sets it (a graph run by LangGraph Server names its user
    in ``configurable.user_id``: ``docs/users.md``)."""
    scope_threads: int = field(default_factory=_default_scope_threads)
    """How many of the user's other threads a ``user``-scope turn reads at most: the most
    recently active ones (a turn's cost grows with each thread read, ``bench scope``).
    ``LANGGRAPH_TOPICS_SCOPE_THREADS`` sets it."""
    scope_topics: int = field(default_factory=_default_scope_topics)
    """How many topics of the user's other threads a ``user``-scope turn has the topic window
    read at most (one cheap-model call each, beside the turn's own windows; only where the
    topic window is a model, only topics holding a quote for the question). 0: none, the
    quotes alone. ``LANGGRAPH_TOPICS_SCOPE_TOPICS`` sets it."""
    store: Literal["embedded", "postgres"] = field(
        default_factory=lambda: cast(Literal["embedded", "postgres"], _default_store())
    )
    """Where threads live: ``embedded`` (topic files, Chroma and SQLite under ``data_dir``) or
    ``postgres`` (checkpoints and topics in the database of ``postgres_uri``, shared by every
    worker; ``data_dir`` keeps only each worker's retrieval cache). ``LANGGRAPH_TOPICS_STORE``
    sets it."""
    postgres_uri: str | None = field(
        default_factory=lambda: _env_text(POSTGRES_URI_ENV), repr=False
    )
    """The database of the ``postgres`` profile (``postgresql://user:password@host/db``); left
    out of ``repr`` so that a password never reaches a log. ``LANGGRAPH_TOPICS_POSTGRES_URI``
    sets it."""
    chroma_url: str | None = field(default_factory=lambda: _env_text(CHROMA_URL_ENV))
    """A Chroma server for the topic index (``http://host:8000``); none: a Chroma database
    under ``data_dir``. ``LANGGRAPH_TOPICS_CHROMA_URL`` sets it."""
    archive_after_days: float = field(
        default_factory=lambda: _env_number(ARCHIVE_AFTER_DAYS_ENV, 7.0, "days")
    )
    """The review archives a topic not activated for longer than this (seed 000 §4.8: dormant
    more than 7 days), whatever its last status. ``LANGGRAPH_TOPICS_ARCHIVE_AFTER_DAYS``."""
    review_at: str | None = field(default_factory=lambda: _env_text(REVIEW_AT_ENV))
    """A daily review time (``03:00``, UTC, or ``03:00+08:00``): the first chat turn after it
    reviews the thread, after its reply (seed 000 §4.8, §16.3; ``review/schedule.py``). None:
    reviews run only when asked (``TopicMemory.review``, ``langgraph-topics review``, a server
    cron). The CLI's ``chat`` turns it on at 03:00 unless set. ``LANGGRAPH_TOPICS_REVIEW_AT``."""
    review_clock: Literal["thread", "wall"] = field(
        default_factory=lambda: cast(Literal["thread", "wall"], _default_review_clock())
    )
    """What a review without an explicit time ages the thread by: ``thread`` (its latest
    message's time, or the wall clock when that is later and the thread is live, its latest
    message at most a day old; ``review/clock.py``), so a history imported today is judged as
    of its own end, not archived whole; ``wall``: the wall clock, whatever the thread's
    messages say. ``LANGGRAPH_TOPICS_REVIEW_CLOCK``."""
    one_off_messages: int = 2
    """A topic of at most this many messages, one of them the user's, is a one-off question."""
    one_off_after_days: float = 1.0
    """The review archives a one-off question not activated for longer than this."""
    merge_similarity: float = field(
        default_factory=lambda: _env_number(MERGE_SIMILARITY_ENV, 0.85, "a cosine in (0, 1]")
    )
    """The review merges two topics whose embedded names and briefs are at least this similar
    (cosine) *and* that share ``merge_shared_keywords`` of their top keywords; when in doubt it
    keeps them apart (seed 000 §4.8): a paraphrased duplicate scores 0.89 on the native briefs,
    while LoCoMo conv-26's recurring chat topics score 0.77-0.81 on shared small talk ("wow",
    "amazing", "love"), which 0.75 would have merged. ``LANGGRAPH_TOPICS_MERGE_SIMILARITY``."""
    merge_shared_keywords: int = 3
    """How many of each topic's ``merge_keywords`` most characteristic keywords two topics must
    share to be merged (besides ``merge_similarity``)."""
    merge_keywords: int = 12
    """How many characteristic keywords of its messages stand for a topic when merging."""
    subtopic_limit_tokens: int | None = field(
        default_factory=lambda: (
            int(_env_number(SUBTOPIC_LIMIT_ENV, DEFAULT_SUBTOPIC_LIMIT_TOKENS, "tokens")) or None
        )
    )
    """A topic whose messages pass this many tokens is divided into subtopics (seed 000 §4.5:
    split, never compressed online), each starting at most at half of it; the same whatever
    the budget, so that topic sizes follow the content (LoCoMo's longest dev conversation holds
    no topic over 10 % at 8,000 tokens, against 70 % undivided). None: no size limit; a topic
    is then divided only when ``cheap_context_tokens`` says the cheap model's window is
    outgrown, or when its provider refuses the prompt as too long.
    ``LANGGRAPH_TOPICS_SUBTOPIC_LIMIT_TOKENS`` sets it (0: no size limit)."""
    cheap_context_tokens: int | None = field(
        default_factory=lambda: int(_env_number(CHEAP_CONTEXT_ENV, 0, "tokens")) or None
    )
    """The cheap model's context window, when known: the topic limit is then
    ``topic_window_share`` of it instead of ``subtopic_limit_tokens``.
    ``LANGGRAPH_TOPICS_CHEAP_CONTEXT_TOKENS`` sets it. Unknown, a provider's refusal of a prompt
    as too long divides that topic all the same (``langgraph_topics.subtopics``)."""
    topic_window_share: float = 0.5
    """Share of the cheap model's context a topic may fill before it is divided; the rest is
    the unsplit messages, the instructions and the reply."""
    topic_window_governor: bool = True
    """Whether the governor decides which active topics get a model call each turn
    (``activation/governor.py``): a topic whose best evidence cannot enter the window is not
    read, an unchanged topic's result is reused, and ``topic_window_input_tokens`` caps the
    turn. It governs model back ends only; the native topic window reads every active topic
    (it costs milliseconds, and its reads are the recall the benchmarks measure)."""
    topic_window_input_tokens: int | None = field(
        default_factory=lambda: (
            int(_env_number(WINDOW_INPUT_ENV, DEFAULT_WINDOW_INPUT_TOKENS, "tokens")) or None
        )
    )
    """The most cheap-model input tokens (cached or not, estimated with the token counter)
    the governed topic windows of one turn may send; the topics with the best evidence are
    read first. None: no cap. ``LANGGRAPH_TOPICS_TOPIC_WINDOW_INPUT_TOKENS`` sets it (0: no
    cap)."""
    topic_window_reads: int | None = 1
    """The most topics a model reads in one turn (every pass of it), the best evidence first;
    the other active topics are read by the native back end (milliseconds, no call: see
    ``topic_window_native_quotes``). The turn waits for the slowest of these calls; past the
    topic holding the best evidence, a model read adds little the native reading does not
    already put in the window, and most return nothing used (``bench cost``: about 0.2 of the
    calls under the threshold with 1 read, 0.3 with 2). Raise it to have more topics judged
    by the model in parallel; None: no limit but the governor's other rules."""
    wake_by_evidence: bool = True
    """Whether a dormant topic holding one of the question's best messages (the turn's
    whole-thread evidence search) wakes before the topic windows read, without a model call
    (``activation/evidence_wake.py``); off, only a recall cue, weak results or the main
    model's ``activate_topic`` wake one (seed 000 §4.7)."""
    topic_window_native_quotes: bool = True
    """Whether an active topic the governor gives no model call is read by the native back
    end (its best evidence quoted, as in a memory without models), so that the main window
    holds at least what the evidence search would put there. Off, such a topic gets its native
    score alone (grey activation goes on) and the window holds the models' references: a
    smaller, cheaper prompt for the strong model, with less evidence in it (``bench cost``
    shows the recall of both windows). It applies to governed topic windows
    (``topic_window_governor``): with the governor off, every active topic is read by the
    model alone, as seed 000 §4.2 describes."""
    topic_window_context_tokens: int | None = 1000
    """How much of the conversation a model topic window reads beside its topic: the newest
    unsplit messages within this many tokens, always back to the newest user message (a tool
    call stays with its results). The older ones are the main window's: a topic's relevance
    to the current question is read from the question and what led to it, and every call of
    the turn would pay for the rest again. None: the whole unsplit region (seed 000 §4.2)."""
    topic_window_summaries: bool = field(
        default_factory=lambda: bool(_env_switch(WINDOW_SUMMARIES_ENV))
    )
    """Whether a model topic window also writes a summary beside its references (seed 000
    §4.2's ``summary``, up to ``summary_soft_limit_chars``). Off by default: the main model
    reads the referenced messages' original text (the zero-loss part) under the topic's name
    and brief, and the turn does not wait for the cheap model to write prose (its output time
    is the wave's length: ``benchmarks/README.md``, ``bench cost``). On, every read topic above
    the threshold adds its summary and a summary card. The native topic window always
    summarises (it costs no output time). ``LANGGRAPH_TOPICS_TOPIC_WINDOW_SUMMARIES=1`` sets it."""
    cache_breakpoints: bool | None = field(
        default_factory=lambda: _env_switch(CACHE_BREAKPOINTS_ENV)
    )
    """Whether model prompts mark the end of their stable prefix (a topic window's system
    prompt and split messages) as a cache breakpoint, in the model's own format
    (``cache_control`` for Anthropic, ``prompt_cache_breakpoint`` for OpenAI). None (auto): for
    the providers that cache only at breakpoints (Anthropic); ``True`` for every model (an
    OpenAI-compatible endpoint that reads OpenAI's breakpoints); ``False`` never.
    ``LANGGRAPH_TOPICS_CACHE_BREAKPOINTS`` (1, 0, auto) sets it."""
    alternating_roles: bool | None = None
    """Whether the window's chat messages open with a user message after the system message
    and alternate, as strict chat templates (many vLLM-served models) require: older messages
    enter as whole exchanges, a reply before any question the window shows is quoted in the
    system prompt, and messages of one role in a row are joined when sent
    (``state/turn_order.py``). None (auto): whenever a model answers from the window (the LLM
    responder, ``TopicMemoryMiddleware``, ``with_topic_memory``, the node helpers); not for
    the native responder, which has no template."""

    def __post_init__(self) -> None:
        if not 0 < self.split_trigger <= 1:
            raise ValueError(f"split_trigger must be in (0, 1], got {self.split_trigger}")
        if self.review_at is not None:
            parse_review_at(self.review_at, f"review_at ({REVIEW_AT_ENV})")
        if self.review_clock not in REVIEW_CLOCKS:
            raise ValueError(f"review_clock must be 'thread' or 'wall', got {self.review_clock!r}")
        if self.memory_scope not in ("thread", "user"):
            raise ValueError(
                f"memory_scope ({MEMORY_SCOPE_ENV}) must be 'thread' or 'user', "
                f"got {self.memory_scope!r}"
            )
        if self.scope_threads < 1:
            raise ValueError(
                f"scope_threads must be at least 1 (memory_scope='thread' reads none), "
                f"got {self.scope_threads}"
            )
        if self.scope_topics < 0:
            raise ValueError(
                f"scope_topics ({SCOPE_TOPICS_ENV}) must not be negative (0: the other threads' "
                f"topics are not read by the topic window), got {self.scope_topics}"
            )
        if self.split_threshold not in ("budget70", "dynamic"):
            raise ValueError(
                f"split_threshold must be 'budget70' or 'dynamic', got {self.split_threshold!r}"
            )
        if not 0 < self.dynamic_trigger <= 1:
            raise ValueError(f"dynamic_trigger must be in (0, 1], got {self.dynamic_trigger}")
        if self.namespace_bytes < 1 or self.namespace_lines < 1:
            raise ValueError(
                "namespace_bytes and namespace_lines must be at least 1, got "
                f"{self.namespace_bytes} and {self.namespace_lines}"
            )
        if isinstance(self.large_tools, str):
            raise ValueError(
                f"large_tools must be a tuple of tool names, got the string {self.large_tools!r}"
            )
        if self.max_namespace_reads < 0:
            raise ValueError(
                f"max_namespace_reads must not be negative, got {self.max_namespace_reads}"
            )
        if not self.min_active <= self.default_active <= self.max_active:
            raise ValueError("need min_active <= default_active <= max_active")
        if self.index_window_tokens < 0:
            raise ValueError(
                f"index_window_tokens must not be negative, got {self.index_window_tokens}"
            )
        if self.dormancy_rounds < 1:
            raise ValueError(f"dormancy_rounds must be at least 1, got {self.dormancy_rounds}")
        if not self.score_decay_days > 0:
            raise ValueError(f"score_decay_days must be positive, got {self.score_decay_days}")
        if self.subtopic_limit_tokens is not None and self.subtopic_limit_tokens < 1:
            raise ValueError(
                f"subtopic_limit_tokens must be at least 1, got {self.subtopic_limit_tokens}"
            )
        if self.cheap_context_tokens is not None and self.cheap_context_tokens < 1:
            raise ValueError(
                f"cheap_context_tokens must be positive, got {self.cheap_context_tokens}"
            )
        if not 0 < self.topic_window_share <= 1:
            raise ValueError(f"topic_window_share must be in (0, 1], got {self.topic_window_share}")
        if self.topic_window_input_tokens is not None and self.topic_window_input_tokens < 1:
            raise ValueError(
                "topic_window_input_tokens must be positive (None: no cap), got "
                f"{self.topic_window_input_tokens}"
            )
        if self.topic_window_context_tokens is not None and self.topic_window_context_tokens < 1:
            raise ValueError(
                "topic_window_context_tokens must be positive (None: every unsplit message), "
                f"got {self.topic_window_context_tokens}"
            )
        if self.topic_window_reads is not None and self.topic_window_reads < 0:
            raise ValueError(
                f"topic_window_reads must not be negative (None: no limit), got "
                f"{self.topic_window_reads}"
            )
        if self.split_topic_candidates < 1:
            raise ValueError(
                f"split_topic_candidates must be at least 1, got {self.split_topic_candidates}"
            )
        if self.min_split_messages < 1:
            raise ValueError(
                f"min_split_messages must be at least 1, got {self.min_split_messages}"
            )
        if self.budget_tokens <= 0:
            raise ValueError(f"budget_tokens must be positive, got {self.budget_tokens}")
        smallest = min_budget_tokens(self.keep_recent)
        if self.budget_tokens < smallest:
            raise ValueError(
                f"budget_tokens must be at least {smallest} (the system prompt and the last "
                f"{self.keep_recent} messages need room), got {self.budget_tokens}"
            )
        if self.budget_tokens > MAX_BUDGET_TOKENS:
            raise ValueError(
                f"budget_tokens must be at most {MAX_BUDGET_TOKENS:,} tokens, got "
                f"{self.budget_tokens:.3g}"
            )
        unknown = sorted(set(self.role_models) - set(ROLE_NAMES))
        if unknown:
            raise ValueError(f"role_models has unknown roles {unknown}; known: {ROLE_NAMES}")
        if self.model_retries < 0 or self.format_retries < 0:
            raise ValueError("model_retries and format_retries must not be negative")
        if not self.model_timeout_seconds > 0:
            raise ValueError(
                f"model_timeout_seconds ({MODEL_TIMEOUT_ENV}) must be positive, "
                f"got {self.model_timeout_seconds}"
            )
        if not self.turn_deadline_seconds >= 0:
            raise ValueError(
                f"turn_deadline_seconds ({TURN_DEADLINE_ENV}) must not be negative (0: no "
                f"deadline), got {self.turn_deadline_seconds}"
            )
        if not 0 < self.merge_similarity <= 1:
            raise ValueError(f"merge_similarity must be in (0, 1], got {self.merge_similarity}")
        if not self.archive_after_days >= 0 or not self.one_off_after_days >= 0:
            raise ValueError(
                "archive_after_days and one_off_after_days must not be negative, got "
                f"{self.archive_after_days} and {self.one_off_after_days}"
            )
        if self.merge_shared_keywords < 0 or self.merge_keywords < 1 or self.one_off_messages < 0:
            raise ValueError(
                "merge_shared_keywords and one_off_messages must not be negative and "
                "merge_keywords must be at least 1"
            )
        if not self.lock_timeout_seconds >= 0:
            raise ValueError(
                f"lock_timeout_seconds must not be negative, got {self.lock_timeout_seconds}"
            )
        self.continuity_rules()  # raises ValueError naming a bad seed 003 number
        self._check_store()
        self._check_prompt_dirs()

    def continuity_rules(self) -> ContinuityRules:
        """Seed 003's keyword continuity numbers of these settings."""
        return ContinuityRules(
            keyword_limit=self.keyword_limit,
            time_decay_factor=self.time_decay_factor,
            similarity_threshold=self.similarity_threshold,
            continuity_threshold=self.continuity_threshold,
            continuity_bonus_for_partial=self.continuity_bonus_for_partial,
            drift_similarity_cap=self.drift_similarity_cap,
        )

    def _check_prompt_dirs(self) -> None:
        """The prompt overrides exist and render (one line naming the setting or file:line).

        The loader reads ``LANGGRAPH_TOPICS_PROMPT_DIR`` after ``prompt_dir``, so both are
        checked; without either, nothing is read.
        """
        from_env = os.environ.get(PROMPT_DIR_ENV)
        if self.prompt_dir is None and not from_env:
            return
        from langgraph_topics.prompts.overrides import check_prompt_dir

        if self.prompt_dir is not None:
            same = bool(from_env) and Path(str(from_env)) == Path(self.prompt_dir)
            check_prompt_dir(Path(self.prompt_dir), PROMPT_DIR_ENV if same else "prompt_dir")
        if from_env and (self.prompt_dir is None or Path(from_env) != Path(self.prompt_dir)):
            check_prompt_dir(Path(from_env), PROMPT_DIR_ENV)

    def _check_store(self) -> None:
        """The store profile and its database address fit together (one line naming them)."""
        if self.store not in STORE_PROFILES:
            raise InputError(
                f"store must be one of {', '.join(STORE_PROFILES)} ({STORE_ENV}), "
                f"got {self.store!r}"
            )
        if self.store != "postgres":
            return
        if not self.postgres_uri:
            raise InputError(
                f"store='postgres' needs postgres_uri ({POSTGRES_URI_ENV}), e.g. "
                "postgresql://user:password@host:5432/database"
            )
        if not self.postgres_uri.startswith(POSTGRES_SCHEMES):
            scheme = self.postgres_uri.split("://", 1)[0] if "://" in self.postgres_uri else ""
            raise InputError(
                f"postgres_uri ({POSTGRES_URI_ENV}) must start with postgresql:// or "
                f"postgres://, got {scheme + '://…' if scheme else 'no scheme'}"
            )


RUN_SETTINGS_KEY = "topic_memory"
"""Where a run carries its own settings: ``context["topic_memory"]`` (``TopicContext``) or
``config["configurable"]["topic_memory"]``."""

RUN_SETTING_NAMES = (
    "budget_tokens",
    "language",
    "strong_model",
    "cheap_model",
    "role_models",
    "prompt_dir",
)
"""The settings one run (a LangGraph Studio assistant, a server or SDK run) may change."""

LANGUAGES = ("auto", "zh", "en")
MODEL_RUN_SETTINGS = ("strong_model", "cheap_model", "role_models", "prompt_dir")
"""Per-run settings that change the role back ends' models or prompts."""


class RunSettings(TypedDict, total=False):
    """Settings of one run, under ``topic_memory`` in its context or ``configurable``.

    Every key is optional; a key left out (or ``null``, or an empty string) keeps the value of
    the services' settings (the ``LANGGRAPH_TOPICS_*`` variables for the server's graph).

    Example:
        ``{"budget_tokens": 1200, "language": "zh", "strong_model": "openai:gpt-4o",
        "cheap_model": "openai:gpt-4o-mini", "role_models": {"index_router": "openai:gpt-4.1-nano"},
        "prompt_dir": "./my_prompts"}``
    """

    budget_tokens: int
    """The main window's token budget (at least 250)."""
    language: Literal["auto", "zh", "en"]
    """Prompt language."""
    strong_model: str | None
    """``init_chat_model`` string of the splitter and the responder."""
    cheap_model: str | None
    """``init_chat_model`` string of the topic window, brief writer and index router."""
    role_models: dict[str, str] | None
    """Models of single roles (added to the settings' own)."""
    prompt_dir: str | None
    """A directory of ``<language>/<name>.md`` prompt overrides."""


def _run_setting_problem(name: str, value: Any, problem: str) -> InputError:
    return InputError(f"{RUN_SETTINGS_KEY}.{name}={value!r}: {problem}")


def _model_string(name: str, value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not value.strip():
        raise _run_setting_problem(name, value, "must be a model string such as openai:gpt-4o")
    return value.strip()


def check_run_settings(raw: Any) -> dict[str, Any]:
    """The ``Settings`` changes a run asks for, checked one by one.

    Args:
        raw: The ``topic_memory`` value of a run (a mapping of ``RunSettings`` keys), or None.

    Returns:
        Keyword arguments for ``dataclasses.replace(settings, ...)``: keys left out, ``null``
        or empty are dropped; ``prompt_dir`` becomes a ``Path``; ``role_models`` is sorted.

    Raises:
        InputError: One line naming the setting, e.g.
            ``topic_memory.budget_tokens=100: must be at least 200 tokens (…)``.
    """
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InputError(
            f"{RUN_SETTINGS_KEY} must be an object of settings "
            f"({', '.join(RUN_SETTING_NAMES)}), got {type(raw).__name__}"
        )
    unknown = sorted(str(key) for key in raw if key not in RUN_SETTING_NAMES)
    if unknown:
        raise InputError(
            f"{RUN_SETTINGS_KEY}.{unknown[0]}: unknown setting; "
            f"known: {', '.join(RUN_SETTING_NAMES)}"
        )
    changes: dict[str, Any] = {}
    budget = raw.get("budget_tokens")
    if budget is not None:
        if isinstance(budget, bool) or not isinstance(budget, int):
            raise _run_setting_problem("budget_tokens", budget, "must be a whole number of tokens")
        if budget < MIN_BUDGET_TOKENS:
            raise _run_setting_problem(
                "budget_tokens",
                budget,
                f"must be at least {MIN_BUDGET_TOKENS} tokens "
                "(the system prompt and the recent messages need room)",
            )
        if budget > MAX_BUDGET_TOKENS:
            raise _run_setting_problem(
                "budget_tokens", f"{budget:.3g}", f"must be at most {MAX_BUDGET_TOKENS:,} tokens"
            )
        changes["budget_tokens"] = budget
    language = raw.get("language")
    if language is not None and language != "":
        if language not in LANGUAGES:
            raise _run_setting_problem(
                "language", language, f"must be one of {', '.join(LANGUAGES)}"
            )
        changes["language"] = language
    for tier in ("strong_model", "cheap_model"):
        model = _model_string(tier, raw.get(tier))
        if model is not None:
            changes[tier] = model
    role_models = raw.get("role_models")
    if role_models is not None:
        if not isinstance(role_models, Mapping):
            raise _run_setting_problem(
                "role_models", role_models, "must map role names to model strings"
            )
        checked: dict[str, str] = {}
        for role, model in role_models.items():
            if role not in ROLE_NAMES:
                raise InputError(
                    f"{RUN_SETTINGS_KEY}.role_models.{role}: unknown role; "
                    f"known: {', '.join(ROLE_NAMES)}"
                )
            named = _model_string(f"role_models.{role}", model)
            if named is not None:
                checked[role] = named
        if checked:
            changes["role_models"] = dict(sorted(checked.items()))
    prompt_dir = raw.get("prompt_dir")
    if prompt_dir is not None and prompt_dir != "":
        if not isinstance(prompt_dir, str | os.PathLike):
            raise _run_setting_problem("prompt_dir", prompt_dir, "must be a directory path")
        if not Path(prompt_dir).is_dir():
            raise _run_setting_problem("prompt_dir", str(prompt_dir), "is not a directory")
        changes["prompt_dir"] = Path(prompt_dir)
    return changes


def with_run_settings(settings: Settings, changes: Mapping[str, Any]) -> Settings:
    """``settings`` with a run's checked changes (``check_run_settings``) applied.

    ``role_models`` are added to the settings' own (a run's model for a role wins).

    Raises:
        InputError: The changed settings do not fit together (one line naming the setting).
    """
    if not changes:
        return settings
    updates = dict(changes)
    if "role_models" in updates:
        updates["role_models"] = dict(
            sorted({**settings.role_models, **updates["role_models"]}.items())
        )
    try:
        return replace(settings, **updates)
    except ValueError as error:
        name = next((key for key in updates if key in str(error)), RUN_SETTINGS_KEY)
        raise InputError(f"{RUN_SETTINGS_KEY}.{name}: {error}") from error


def run_settings_key(changes: Mapping[str, Any]) -> str:
    """A stable text key of a run's checked changes (for caches)."""
    return json.dumps(
        {key: str(value) if isinstance(value, Path) else value for key, value in changes.items()},
        sort_keys=True,
    )
