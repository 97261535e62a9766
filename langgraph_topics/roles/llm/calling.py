"""One model call of a role: provider retries, one format retry with the error fed back, stats.

The role back ends build the prompt and parse the reply; this module owns what is the same for
all of them: the retry loop, the usage accounting, the fallback to the native back end and the
record that ends up in the turn's tuning-log line.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable

from langgraph_topics.errors import first_line, mark_reported
from langgraph_topics.prompts.loader import load_prompt
from langgraph_topics.roles.llm.deadline import RoleDeadline
from langgraph_topics.roles.llm.retries import Backoff
from langgraph_topics.roles.llm.xml_reply import DegenerateReply, ReplyFormatError
from langgraph_topics.settings import Settings
from langgraph_topics.state.messages import text_of
from langgraph_topics.tuning.role_stats import CallRecord, current_collector

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class CallPolicy:
    """How a role calls its model."""

    backoff: Backoff = field(default_factory=Backoff)
    format_retries: int = 1
    prompt_dir: Path | None = None
    language: str = "auto"

    @classmethod
    def from_settings(cls, settings: Settings) -> CallPolicy:
        """The policy the settings describe."""
        return cls(
            backoff=Backoff(settings.model_retries, settings.retry_backoff_seconds),
            format_retries=settings.format_retries,
            prompt_dir=settings.prompt_dir,
            language=settings.language,
        )


def add_usage(record: CallRecord, reply: BaseMessage) -> None:
    """Add the provider-reported usage of one reply (cache reads included) to the record."""
    usage: Any = getattr(reply, "usage_metadata", None) or {}
    record.input_tokens += int(usage.get("input_tokens") or 0)
    record.output_tokens += int(usage.get("output_tokens") or 0)
    details = usage.get("input_token_details") or {}
    record.cached_tokens += int(details.get("cache_read") or 0)


def model_label(model: object) -> str:
    """A model's name for a log line, looking through wrappers such as ``bind_tools``."""
    for _ in range(5):
        bound = getattr(model, "bound", None)
        if bound is None:
            break
        model = bound
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def emit(record: CallRecord) -> None:
    """Hand the record to the collector of the current run (dropped outside a run)."""
    found = current_collector()
    if found is not None:
        collector, thread_id = found
        collector.record(thread_id, record)


class ModelCaller:
    """Calls one model for one role.

    A failed call is logged as one WARNING line naming the role, the model and the error's
    first line (the traceback goes to DEBUG); a provider retry is an INFO line.

    Args:
        role: The role name, as the tuning log shows it.
        model: The chat model (or a runnable around it, e.g. with tools bound).
        policy: Retries, prompt directory and language preference.
    """

    def __init__(self, role: str, model: Runnable[Any, Any], policy: CallPolicy) -> None:
        self.role = role
        self.model = model
        self.policy = policy
        self.who = f"{role} ({model_label(model)})"
        """How log lines name the caller: the role and its model."""

    def invoke(self, messages: Sequence[BaseMessage], record: CallRecord) -> AIMessage:
        """One model call with provider retries; usage and retries go into ``record``.

        Inside a turn's deadline (``deadline.py``) each request is waited for until the
        deadline at most, and a retry is made only when the deadline leaves time for it.
        """

        def retried(error: BaseException) -> None:
            record.retries += 1
            record.errors.append(f"provider: {type(error).__name__}: {error}"[:300])
            log.info("%s: provider failure, retrying: %s", self.who, first_line(error))

        def request() -> Any:
            return self.model.invoke(list(messages))

        deadline = RoleDeadline.current(self.role)
        attempt = request if deadline is None else lambda: deadline.run(request)
        reply = self.policy.backoff.run(attempt, retried, deadline)
        if not isinstance(reply, AIMessage):
            raise TypeError(f"{self.role}: the model returned {type(reply).__name__}")
        add_usage(record, reply)
        return reply

    def ask(
        self,
        messages: Sequence[BaseMessage],
        parse: Callable[[AIMessage], T],
        *,
        element: str,
        language: str,
        record: CallRecord,
        retry_prompt: str = "format_retry",
    ) -> T:
        """Call the model and parse its reply; a malformed reply is retried with the error.

        The retry appends the bad reply and the prompt ``retry_prompt`` (rendered with ``error``
        and ``element``) to the conversation.

        Raises:
            ReplyFormatError: Still malformed after ``format_retries`` retries.
            Exception: A provider failure that outlasted its retries.
        """
        conversation = list(messages)
        attempt = 0
        while True:
            reply = self.invoke(conversation, record)
            try:
                return parse(reply)
            except ReplyFormatError as error:
                record.errors.append(f"format: {error}"[:300])
                if attempt >= self.policy.format_retries or isinstance(error, DegenerateReply):
                    raise
                attempt += 1
                record.format_retries += 1
                log.info("%s: malformed reply, asking again: %s", self.who, first_line(str(error)))
                feedback = load_prompt(retry_prompt, language, self.policy.prompt_dir).render(
                    error=str(error), element=element
                )
                # Only the reply's text goes back: a tool call without its result would be
                # rejected by most providers.
                conversation += [AIMessage(text_of(reply)), HumanMessage(feedback)]

    def guarded(
        self,
        record: CallRecord,
        call: Callable[[], T],
        fallback: Callable[[], T],
        *,
        fallback_on_failure: bool,
    ) -> T:
        """Run ``call``; on a malformed reply (or any failure, when allowed) run ``fallback``.

        The record is completed (latency, outcome) and emitted whatever happens. A failure is
        logged here, once, as one line (the traceback at DEBUG), and marked as reported
        (``langgraph_topics.errors.mark_reported``) when it is raised on to the caller.
        """
        start = time.perf_counter()
        try:
            try:
                return call()
            except ReplyFormatError as error:
                log.warning(
                    "%s: malformed reply; the native back end serves: %s",
                    self.who,
                    first_line(str(error)),
                )
                record.fallback = True
                return fallback()
            except Exception as error:
                self._log_failure(error, record, falls_back=fallback_on_failure)
                if not fallback_on_failure:
                    record.failed = True
                    mark_reported(error)
                    raise
                record.fallback = True
                return fallback()
        finally:
            record.latency_s = round(time.perf_counter() - start, 4)
            emit(record)

    def _log_failure(self, error: Exception, record: CallRecord, *, falls_back: bool) -> None:
        retries = f" after {record.retries} retries" if record.retries else ""
        served = "; the native back end serves" if falls_back else ""
        log.warning("%s: model call failed%s%s: %s", self.who, retries, served, first_line(error))
        log.debug("%s: the failed call's traceback", self.who, exc_info=error)
