"""The CPU each node of the topic graph spends, for ``bench overhead``'s breakdown of a turn.

A node's time is its own thread's CPU time (the topic windows run in parallel, each on a
worker thread), summed over the calls; what a turn costs beyond its nodes is LangGraph's own
work (tasks, channels, the checkpoint) and the memory's (locks, the turn's input). The graph is
built with the nodes wrapped (``build_graph(wrap_nodes=...)``, any :class:`NodeWrapper`); the
graph a memory runs by default is not.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

Node = TypeVar("Node", bound=Callable[..., Any])


class NodeWrapper(Protocol):
    """Something that wraps each node of a graph as it is built (a timer, a recorder)."""

    def wrap(self, name: str, node: Node) -> Node:
        """``node``, wrapped; its signature kept (LangGraph reads it)."""
        ...


class NodeTimes:
    """Thread CPU seconds of each node, summed over its calls."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._lock = threading.Lock()

    def wrap(self, name: str, node: Node) -> Node:
        """``node``, its thread CPU time added to ``name``'s on every call.

        ``functools.wraps`` keeps the node's signature and annotations: LangGraph reads them to
        pass the runtime and to draw the node's routes.
        """

        @functools.wraps(node)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            try:
                return node(*args, **kwargs)
            finally:
                spent = time.thread_time() - started
                with self._lock:
                    self.seconds[name] = self.seconds.get(name, 0.0) + spent

        return timed  # type: ignore[return-value]

    def totals(self) -> dict[str, float]:
        """Each node's thread CPU seconds so far (a copy: the difference of two is a turn's)."""
        with self._lock:
            return dict(self.seconds)
