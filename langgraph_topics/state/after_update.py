"""The state as the next step will read it: a node's update applied by the schema's reducers.

A conditional edge makes LangGraph copy every channel of the state (about 40 here) to show
its route the writes of the node before it; with four routes a turn that cost about a
millisecond (measured beside the no-work floor of ``bench overhead``). A node that names its
own successor (``graph/routed.py``) reads the few keys its route needs through this view
instead, merged one key at a time, as the channels would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import cache
from typing import Annotated, Any, get_origin, get_type_hints

from langgraph.types import Overwrite

from langgraph_topics.state.schema import TopicState

Reducer = Callable[[Any, Any], Any]


@cache
def schema_reducers(schema: type) -> dict[str, Reducer]:
    """The reducer of each key of ``schema`` that has one, as LangGraph picks it (last metadata)."""
    reducers: dict[str, Reducer] = {}
    for key, hint in get_type_hints(schema, include_extras=True).items():
        if get_origin(hint) is Annotated and callable(hint.__metadata__[-1]):
            reducers[key] = hint.__metadata__[-1]
    return reducers


class StateAfter(Mapping[str, Any]):
    """``state`` with ``update`` applied: an ``Overwrite`` replaces, a reducer merges.

    Only the keys read are merged (a route reads two or three), and nothing is copied; the view
    must not outlive the step (it shares the state's and the update's values).
    """

    def __init__(
        self, state: Mapping[str, Any], update: Mapping[str, Any], schema: type = TopicState
    ) -> None:
        self._state = state
        self._update = update
        self._reducers = schema_reducers(schema)

    def __getitem__(self, key: str) -> Any:
        if key not in self._update:
            return self._state[key]
        value = self._update[key]
        if isinstance(value, Overwrite):
            return value.value
        reducer = self._reducers.get(key)
        if reducer is None or key not in self._state:
            return value
        return reducer(self._state[key], value)

    def __iter__(self) -> Iterator[str]:
        yield from self._state
        yield from (key for key in self._update if key not in self._state)

    def __len__(self) -> int:
        return sum(1 for _ in self)
