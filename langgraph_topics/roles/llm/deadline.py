"""One deadline for the model calls of a turn (``Settings.turn_deadline_seconds``).

Each request is bounded by its client's timeout (``Settings.model_timeout_seconds`` for models
built from strings); the retries of a call and the calls of one turn (topic windows, index
router, splitter, brief writer, responder) share one deadline, so a hung provider cannot hold a
turn for timeout × retries × calls (issue 41 saw 580 s). A call still running at the deadline is
given up: its request ends on its own at the client's timeout, on a daemon thread, and the call
fails with :class:`TurnDeadlineExceeded`, which degrades the role as any failed call does (the
native back end serves, a topic window is left out, the responder's turn ends with an apology).

In a chat turn the responder keeps the end of the deadline for itself (``answer_reserve``): the
calls before it stop that much earlier, so a hung cheap model does not take the answer's time.

The deadline is a context variable: ``TopicMemory`` sets it around each run of the graph, and
LangGraph copies the context into the tasks it runs (the topic windows' parallel calls too). A
graph run by the application itself has none unless it runs inside :func:`turn_deadline`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar, copy_context
from dataclasses import dataclass
from typing import TypeVar

from langgraph_topics.settings import TURN_DEADLINE_ENV, Settings

T = TypeVar("T")

ANSWERING_ROLE = "responder"
"""The role the answer reserve is kept for."""


class TurnDeadlineExceeded(RuntimeError):
    """A model call ran out of the turn's time (never retried: no time is left for it)."""


@dataclass(frozen=True)
class _TurnClock:
    ends_at: float
    """``time.monotonic()`` at the deadline."""
    seconds: float
    answer_reserve: float


_CURRENT: ContextVar[_TurnClock | None] = ContextVar("langgraph_topics_turn_deadline", default=None)


@contextmanager
def turn_deadline(seconds: float | None, *, answer_reserve: float = 0.0) -> Iterator[None]:
    """Model calls made inside end within ``seconds`` from now (None or 0: no deadline).

    Args:
        seconds: The turn's time for model calls.
        answer_reserve: Seconds at the end that only the responder may use.

    An inner deadline cannot outlast the one around it.
    """
    if not seconds or seconds <= 0:
        yield
        return
    ends_at = time.monotonic() + seconds
    outer = _CURRENT.get()
    if outer is not None and outer.ends_at < ends_at:
        ends_at = outer.ends_at
    token = _CURRENT.set(_TurnClock(ends_at, seconds, min(answer_reserve, seconds / 2)))
    try:
        yield
    finally:
        _CURRENT.reset(token)


def settings_deadline(settings: Settings, mode: str | None = None) -> AbstractContextManager[None]:
    """The settings' deadline for one run of the graph in ``mode``.

    A chat turn (the responder answers after the other roles) keeps the answer one request's
    time (``model_timeout_seconds``, at most half the deadline).
    """
    seconds = settings.turn_deadline_seconds
    reserve = settings.model_timeout_seconds if mode == "chat" else 0.0
    return turn_deadline(seconds, answer_reserve=reserve)


@dataclass(frozen=True)
class RoleDeadline:
    """The deadline as one role's calls see it (the answer reserve taken off the others)."""

    role: str
    ends_at: float
    seconds: float
    reserved: float

    @classmethod
    def current(cls, role: str) -> RoleDeadline | None:
        """The deadline of the turn this call belongs to (None: no deadline)."""
        clock = _CURRENT.get()
        if clock is None:
            return None
        reserved = 0.0 if role == ANSWERING_ROLE else clock.answer_reserve
        return cls(role, clock.ends_at - reserved, clock.seconds, reserved)

    def left(self) -> float:
        """Seconds this role's calls may still take."""
        return self.ends_at - time.monotonic()

    def exceeded(self, detail: str = "") -> TurnDeadlineExceeded:
        """The error of a call that ran out of time: one line naming the setting."""
        kept = f", the last {self.reserved:g} s kept for the answer" if self.reserved else ""
        what = f"; {detail}" if detail else ""
        return TurnDeadlineExceeded(
            f"the turn's {self.seconds:g} s for model calls ran out{kept}"
            f" (Settings.turn_deadline_seconds, {TURN_DEADLINE_ENV}){what}"
        )

    def run(self, call: Callable[[], T]) -> T:
        """Run ``call``, waiting for it until the deadline at most.

        The call runs on a daemon thread in a copy of this context (callbacks and the graph's
        runtime stay reachable); given up, it is left to end at its client's timeout.
        """
        left = self.left()
        if left <= 0:
            raise self.exceeded()
        results: list[T] = []
        failures: list[BaseException] = []
        finished = threading.Event()
        context = copy_context()

        def attempt() -> None:
            try:
                results.append(context.run(call))
            except BaseException as error:  # handed to the waiting caller
                failures.append(error)
            finally:
                finished.set()

        threading.Thread(target=attempt, name=f"{self.role} model call", daemon=True).start()
        if not finished.wait(left):
            raise self.exceeded(f"a request still unanswered after {left:.1f} s was given up")
        if failures:
            raise failures[0]
        return results[0]
