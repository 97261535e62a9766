"""The settings of one topic memory; every number defaults to the specification's value."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

DATA_DIR_ENV = "LANGGRAPH_TOPICS_DATA_DIR"
BUDGET_ENV = "LANGGRAPH_TOPICS_BUDGET"


def _default_data_dir() -> Path:
    return Path(os.environ.get(DATA_DIR_ENV, ".langgraph_topics"))


def _default_budget() -> int:
    return int(os.environ.get(BUDGET_ENV, "8000"))


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

    def __post_init__(self) -> None:
        if not 0 < self.split_trigger <= 1:
            raise ValueError(f"split_trigger must be in (0, 1], got {self.split_trigger}")
        if not self.min_active <= self.default_active <= self.max_active:
            raise ValueError("need min_active <= default_active <= max_active")
        if self.budget_tokens <= 0:
            raise ValueError(f"budget_tokens must be positive, got {self.budget_tokens}")
