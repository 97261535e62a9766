"""The settings of one topic memory; every number defaults to the specification's value."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

DATA_DIR_ENV = "LANGGRAPH_TOPICS_DATA_DIR"
BUDGET_ENV = "LANGGRAPH_TOPICS_BUDGET"
STRONG_MODEL_ENV = "LANGGRAPH_TOPICS_STRONG_MODEL"
CHEAP_MODEL_ENV = "LANGGRAPH_TOPICS_CHEAP_MODEL"
PROMPT_DIR_ENV = "LANGGRAPH_TOPICS_PROMPT_DIR"
LOCK_TIMEOUT_ENV = "LANGGRAPH_TOPICS_LOCK_TIMEOUT"
MIN_BUDGET_TOKENS = 200
"""The smallest main-window budget accepted.

Part of every window is fixed: the main-window system prompt without topics takes about 80
(English) to 120 (Chinese) tokens with the bundled tokenizer, and the last messages always stay
in the window. Under 200 tokens the system prompt alone fills most of the budget, every turn
would split, and the recent messages would be cut to nothing.
"""
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


def _env_model(variable: str) -> str | None:
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
    keep_recent: int = 20
    min_split_messages: int = 4
    """A split waits until at least this many messages are older than the last ``keep_recent``.

    When the last 20 messages alone pass the trigger (small budgets), every turn would
    otherwise split one exchange at a time, scattering one subject over many tiny topics; the
    few older messages waiting meanwhile stay in the working set and compete for the window
    by value like any other evidence.
    """
    """The last N messages always stay in the main window (§4.3)."""
    reference_threshold: float = 0.3
    """Under this score a topic result carries no references and no summary (§4.2)."""
    score_window: int = 5
    """Sliding-average window of relevance scores (§16.2)."""
    min_active: int = 3
    default_active: int = 10
    max_active: int = 20
    """The active-topic range and its default (§4.7, §15.5)."""
    summary_soft_limit_chars: int = 2000
    brief_bytes: int = 1024
    """About 1 KB per brief (§4.6)."""
    max_activation_rounds: int = 2
    """How many times one turn may loop back through the activate node."""
    deep_search_k: int = 12
    """Candidates read from the index on a deep (recall-cue) search; a normal search reads half."""
    language: str = "auto"
    """Prompt language: ``zh``, ``en`` or ``auto`` (detected from the conversation)."""
    tokenizer: str = "o200k_base"
    """Encoding of the bundled tokenizer used when no token counter is injected."""
    prompt_dir: Path | None = field(default_factory=_default_prompt_dir)
    """A directory of ``<language>/<name>.md`` files overriding the packaged prompts."""
    strong_model: str | None = field(default_factory=lambda: _env_model(STRONG_MODEL_ENV))
    """``init_chat_model`` string of the splitter and the responder (none: native back ends)."""
    cheap_model: str | None = field(default_factory=lambda: _env_model(CHEAP_MODEL_ENV))
    """``init_chat_model`` string of the topic window, brief writer and index router."""
    role_models: dict[str, str] = field(default_factory=_default_role_models)
    """Per-role model strings, overriding the tier (keys from ``ROLE_NAMES``)."""
    model_timeout_seconds: float = 60.0
    """Timeout of one model request (models built from strings)."""
    model_retries: int = 2
    """Retries of a request that failed in the provider (timeout, 429, 5xx, connection)."""
    retry_backoff_seconds: float = 1.0
    """First wait before a provider retry; it doubles each time."""
    format_retries: int = 1
    """Retries of a malformed reply, with the error fed back, before the native back end."""
    tuning_log: bool = True
    """Append one line per turn to ``threads/<thread>/tuning.jsonl`` (seed 000 §16)."""
    lock_timeout_seconds: float = field(default_factory=_default_lock_timeout)
    """How long a write (``chat``, an import) waits for another writer of the same thread
    (another process, or thread) before it fails with ``ThreadBusyError``; a read waits as
    long for the turn being written. ``LANGGRAPH_TOPICS_LOCK_TIMEOUT`` sets it."""

    def __post_init__(self) -> None:
        if not 0 < self.split_trigger <= 1:
            raise ValueError(f"split_trigger must be in (0, 1], got {self.split_trigger}")
        if not self.min_active <= self.default_active <= self.max_active:
            raise ValueError("need min_active <= default_active <= max_active")
        if self.min_split_messages < 1:
            raise ValueError(
                f"min_split_messages must be at least 1, got {self.min_split_messages}"
            )
        if self.budget_tokens <= 0:
            raise ValueError(f"budget_tokens must be positive, got {self.budget_tokens}")
        if self.budget_tokens < MIN_BUDGET_TOKENS:
            raise ValueError(
                f"budget_tokens must be at least {MIN_BUDGET_TOKENS} (the system prompt and the "
                f"recent messages need room), got {self.budget_tokens}"
            )
        unknown = sorted(set(self.role_models) - set(ROLE_NAMES))
        if unknown:
            raise ValueError(f"role_models has unknown roles {unknown}; known: {ROLE_NAMES}")
        if self.model_retries < 0 or self.format_retries < 0:
            raise ValueError("model_retries and format_retries must not be negative")
        if not self.lock_timeout_seconds >= 0:
            raise ValueError(
                f"lock_timeout_seconds must not be negative, got {self.lock_timeout_seconds}"
            )
