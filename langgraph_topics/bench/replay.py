"""The topic graph replaying recorded node outputs: what LangGraph charges for its real updates.

``bench overhead`` records what every node returned (its update, or its ``Command``) on turns
of the topic graph, then runs the same turns on a copy of the thread's checkpoints taken
before them, with a graph whose nodes return the recorded values. The state evolves exactly
as it did, and the nodes cost nothing: the turn's cost is LangGraph's for the topic graph's
real state and updates (its channels, reducers and checkpoint), without the memory's wrapper
around ``graph.invoke``. Over the floor's turn it is what no saving inside the nodes can go
under; the real turn's cost beyond its nodes, over it, is what the nodes' work adds to
LangGraph's own (``bench overhead``'s breakdown shows both).
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

from langgraph_topics.graph.node_times import Node, NodeWrapper

OutputKey = tuple[int, str, str, int]
"""(turn, node, topic id for a topic window, the node's call of that turn): the windows of a
turn run in any order, and a node may run twice in a turn (after an activation)."""


class NodeOutputs:
    """What each node returned, turn by turn: recorded from one graph, played back by another.

    Set :attr:`turn` before each turn, the same numbers when recording and when playing back.
    """

    def __init__(self) -> None:
        self.turn = 0
        self._outputs: dict[OutputKey, Any] = {}
        self._calls: dict[tuple[str, int, str, str], int] = {}
        self._lock = threading.Lock()

    def recorder(self) -> NodeWrapper:
        """Wraps nodes so that each call's output is kept under its turn, node and topic."""
        return _Calls(self, play=False)

    def player(self) -> NodeWrapper:
        """Wraps nodes so that each call returns the output kept for it (the node never runs)."""
        return _Calls(self, play=True)

    def keep(self, name: str, state: Any, output: Any) -> None:
        """Keep ``output`` as what node ``name`` returned for ``state`` this turn."""
        with self._lock:
            self._outputs[self._key("kept", name, state)] = output

    def kept(self, name: str, state: Any) -> Any:
        """What node ``name`` returned at the same call of the recorded turn of this number."""
        with self._lock:
            key = self._key("played", name, state)
            if key not in self._outputs:
                raise KeyError(
                    f"no recorded output of node {name!r} in turn {key[0]} (call {key[3] + 1})"
                )
            return self._outputs[key]

    def _key(self, role: str, name: str, state: Any) -> OutputKey:
        task = state.get("window_task") if isinstance(state, Mapping) else None
        topic = task["topic_id"] if isinstance(task, Mapping) else ""
        counted = (role, self.turn, name, topic)
        call = self._calls.get(counted, 0)
        self._calls[counted] = call + 1
        return (self.turn, name, topic, call)


class _Calls:
    """Each call of a wrapped node recorded into ``outputs``, or played back from them."""

    def __init__(self, outputs: NodeOutputs, *, play: bool) -> None:
        self._outputs = outputs
        self._play = play

    def wrap(self, name: str, node: Node) -> Node:
        outputs, play = self._outputs, self._play

        @functools.wraps(node)
        def call(state: Any, *args: Any, **kwargs: Any) -> Any:
            if play:
                return outputs.kept(name, state)
            output = node(state, *args, **kwargs)
            outputs.keep(name, state, output)
            return output

        return call  # type: ignore[return-value]


class BothWrappers:
    """Two wrappers on every node: ``outer``'s around ``inner``'s."""

    def __init__(self, outer: NodeWrapper, inner: NodeWrapper) -> None:
        self._outer, self._inner = outer, inner

    def wrap(self, name: str, node: Node) -> Node:
        """``node`` wrapped by ``inner``, then by ``outer``."""
        return self._outer.wrap(name, self._inner.wrap(name, node))


def copy_checkpoints(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite checkpoint database, taken while it is open elsewhere."""
    with closing(sqlite3.connect(source)) as reading, closing(sqlite3.connect(target)) as writing:
        reading.backup(writing)
