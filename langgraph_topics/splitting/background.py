"""Splits planned after a turn's reply, where no user waits for them (``TopicMemory``).

A chat turn over the 70 % trigger used to split before its topic windows read anything, so
the user waited for the splitter and every brief writer (24–54 s with models). Seed 000's
order "split, then read" matters for what the *next* turn sees, and the trigger leaves 30 %
of the budget for that turn: so the turn answers first, and then, on a worker thread, the
split is planned (its model calls, holding no lock) and written by a ``split`` run of the
graph (the writer lock held for the writes only: milliseconds).

What keeps it safe:
- Nothing is written while planning. The write is the split node's, checkpointed and
  crash-safe as any split (invariants 1 and 5); a plan lost in a crash is planned again.
- A turn that arrives during the write waits for the writer lock: it sees the split whole
  or not at all. A turn that arrives while the plan is being made reads the thread as it is.
- A plan that no longer fits the thread when its write comes (a review, an import, another
  split in between) is dropped (``prepared.still_valid``); its messages stay unsplit.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_all

from langgraph_topics.errors import first_line
from langgraph_topics.roles.llm.brief_writer import LlmBriefWriter
from langgraph_topics.roles.llm.splitter import LlmSplitter
from langgraph_topics.roles.protocols import Roles
from langgraph_topics.splitting.prepared import PreparedSplit

log = logging.getLogger(__name__)

MAX_PLANNING_THREADS = 2
"""Threads planning splits at once (across a memory's threads): the work waits on models."""


def waits_on_models(roles: Roles) -> bool:
    """Whether a split by these roles spends its time waiting on a model's answers.

    Only then does planning it beside the next turn save the user time; an in-process
    splitter (native, a test's fake, an application's own) works on the same CPU.
    """
    return isinstance(roles.splitter, LlmSplitter) or isinstance(roles.brief_writer, LlmBriefWriter)


class BackgroundSplits:
    """Plans each thread's split on a worker, then has it written; one job a thread at a time.

    Args:
        plan: Works out the split a thread needs now (``None``: none is due). Called on a
            worker thread; must write nothing.
        write: Writes the prepared split of a thread (a ``split`` run of the graph, which
            takes it back with :meth:`take`). Called on the same worker thread.
    """

    def __init__(
        self,
        plan: Callable[[str], PreparedSplit | None],
        write: Callable[[str], None],
    ) -> None:
        self._plan = plan
        self._write = write
        self._jobs: dict[str, Future[None]] = {}
        self._ready: dict[str, PreparedSplit] = {}
        self._workers: set[int] = set()
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def submit(self, thread_id: str) -> bool:
        """Plan ``thread_id``'s split in the background; False when one is already under way."""
        with self._lock:
            job = self._jobs.get(thread_id)
            if job is not None and not job.done():
                return False
            if self._pool is None:
                self._pool = ThreadPoolExecutor(MAX_PLANNING_THREADS, "topic-split")
            self._jobs[thread_id] = self._pool.submit(self._run, thread_id)
            return True

    def take(self, thread_id: str) -> PreparedSplit | None:
        """The split prepared for ``thread_id``, handed over once (the split node writes it)."""
        with self._lock:
            return self._ready.pop(thread_id, None)

    def busy(self, thread_id: str) -> bool:
        """Whether a split of ``thread_id`` is being planned or written now."""
        with self._lock:
            job = self._jobs.get(thread_id)
            return job is not None and not job.done()

    def wait(self, thread_id: str | None = None, timeout: float | None = None) -> bool:
        """Wait until the split of ``thread_id`` (or of every thread) is planned and written.

        A no-op on a worker itself (its write runs a turn, which may ask to wait). Returns
        whether nothing is left under way.
        """
        if threading.get_ident() in self._workers:
            return True
        with self._lock:
            jobs = [job for key, job in self._jobs.items() if thread_id is None or key == thread_id]
        if not jobs:
            return True
        _, pending = wait_all(jobs, timeout)
        return not pending

    def close(self) -> None:
        """Finish every split under way, then stop the workers."""
        self.wait()
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _run(self, thread_id: str) -> None:
        ident = threading.get_ident()
        with self._lock:
            self._workers.add(ident)
        try:
            prepared = self._plan(thread_id)
            if prepared is None:
                return
            with self._lock:
                self._ready[thread_id] = prepared
            self._write(thread_id)
        except Exception as error:  # the messages stay unsplit: the next turn plans again
            log.warning(
                "thread %s: the split planned after the reply was not written (%s); its "
                "messages stay unsplit and a later turn splits them",
                thread_id,
                first_line(error),
            )
        finally:
            with self._lock:
                self._ready.pop(thread_id, None)  # one the write did not take is stale
                self._workers.discard(ident)
