"""Bounded retries with exponential backoff for provider failures.

Transient failures are timeouts, refused or dropped connections, 429 and 5xx answers (408, 409
and 425 too); anything else (a 400, a bad key) fails at once, since asking again cannot help.
Provider clients are expected to run with their own retries off (``max_retries=0``). A retry
that the turn's deadline cannot wait for is not made (``deadline.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from langgraph_topics.errors import first_line
from langgraph_topics.roles.llm.deadline import RoleDeadline

T = TypeVar("T")

_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
_TRANSIENT_NAMES = ("Timeout", "Connection", "RemoteProtocolError", "TransportError")
MAX_BACKOFF_SECONDS = 30.0
_TOO_LONG_MARKERS = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "too long",
    "too many tokens",
    "reduce the length",
)
"""How providers word a prompt over the model's context (OpenAI and the servers that copy
it, vLLM, Ollama, DeepSeek: "maximum context length is…"; Anthropic: "prompt is too long")."""


def status_of(error: BaseException) -> int | None:
    """The HTTP status of a provider error, when it carries one."""
    status = getattr(error, "status_code", None)
    if status is None:
        status = getattr(getattr(error, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def is_transient(error: BaseException) -> bool:
    """Whether asking again may succeed."""
    status = status_of(error)
    if status is not None:
        return status in _TRANSIENT_STATUS or status >= 500
    if isinstance(error, TimeoutError | ConnectionError):
        return True
    # Provider SDKs have their own hierarchies (openai, httpx, anthropic…); their class names are
    # the one thing they share.
    names = (cls.__name__ for cls in type(error).__mro__)
    return any(marker in name for name in names for marker in _TRANSIENT_NAMES)


def is_prompt_too_long(error: BaseException) -> bool:
    """Whether a provider refused the prompt as longer than the model's context (400 or 413)."""
    if status_of(error) not in (400, 413):
        return False
    text = str(error).lower()
    return any(marker in text for marker in _TOO_LONG_MARKERS)


@dataclass(frozen=True)
class Backoff:
    """Retry policy of provider calls."""

    retries: int = 2
    base_seconds: float = 1.0
    sleep: Callable[[float], None] = time.sleep

    def delay(self, attempt: int) -> float:
        """Wait before retry number ``attempt`` (0-based): base × 2^attempt, capped."""
        return float(min(MAX_BACKOFF_SECONDS, self.base_seconds * 2.0**attempt))

    def run(
        self,
        call: Callable[[], T],
        on_retry: Callable[[BaseException], None],
        deadline: RoleDeadline | None = None,
    ) -> T:
        """Run ``call``; retry transient failures up to ``retries`` times, within ``deadline``.

        Raises:
            TurnDeadlineExceeded: A transient failure the deadline leaves no time to retry.
            Exception: The last failure, when it is not transient or retries are exhausted.
        """
        attempt = 0
        while True:
            try:
                return call()
            except Exception as error:
                if attempt >= self.retries or not is_transient(error):
                    raise
                if deadline is not None and deadline.left() <= self.delay(attempt):
                    detail = f"no time to retry {first_line(error)}"
                    raise deadline.exceeded(detail) from error
                on_retry(error)
                self.sleep(self.delay(attempt))
                attempt += 1
