"""How many of a turn's topic windows run at once: all of them, unless they run in-process.

Topic windows that call a model mostly wait on the network, so every active topic window of a
turn runs at once (``Settings.max_active``; LangGraph's default pool has only a few workers on
a small machine). The native topic window does its work on this process's CPU and holds the
interpreter lock for most of it: beside a second thread (which overlaps the numpy products that
release the lock) more threads only wait for one another, and each thread a turn starts may
take a malloc arena of its own whose free bytes stay with it. Continuing a 10,000-turn
``bench soak`` thread (110 turns, 2 cores): a median turn of 77.5–83.6 ms on two threads
against 80.8–86.6 ms on twenty, and 3–8 MB less resident memory (issue 41 item 7).
"""

from __future__ import annotations

import os

from langgraph_topics.roles.native.topic_window import NativeTopicWindow
from langgraph_topics.roles.protocols import Roles

IN_PROCESS_WINDOW_THREADS = 2
"""Threads for topic windows that run on this process's CPU (the native one)."""


def fan_out_threads(roles: Roles, max_active: int) -> int:
    """The ``max_concurrency`` of a turn: threads for its topic windows (at least 1)."""
    if isinstance(roles.topic_window, NativeTopicWindow):
        cores = os.cpu_count() or 1
        return max(1, min(max_active, cores, IN_PROCESS_WINDOW_THREADS))
    return max(1, max_active)
