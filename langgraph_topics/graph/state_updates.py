"""``update_state`` on the topic graph: adding or editing messages works, removing is refused.

Studio's state editor and ``graph.update_state`` write a checkpoint without running a node. An
added message comes after the last counted one (``last_seen_id``), so the next turn counts it
like any input, and a message replaced under its own id stays where it was. A removed message
would be gone from the working set while the thread still counts it: lost (invariant 1), and
``check`` failing on that branch forever. Nothing can put it back, so the removal is refused
with one line before any checkpoint is written; forking from a checkpoint before the message
was added does what a removal means, and keeps the message on its own branch.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

from langchain_core.messages import RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StateUpdate

from langgraph_topics.errors import InputError
from langgraph_topics.scope.graph_run import scope_context
from langgraph_topics.scope.run_scope import given_user, refuse_foreign_run


class MessageRemovalError(InputError):
    """``update_state`` tried to remove a message from a topic-memory thread."""


def _removed_ids(values: object) -> list[str]:
    """The ids an update's ``messages`` would remove (``RemoveMessage`` or its dict form)."""
    if not isinstance(values, Mapping):
        return []
    messages = values.get("messages")
    if messages is None:
        return []
    listed = (
        messages if isinstance(messages, Sequence) and not isinstance(messages, str) else [messages]
    )
    removed: list[str] = []
    for message in listed:
        if isinstance(message, RemoveMessage):
            removed.append(str(message.id))
        elif isinstance(message, Mapping) and message.get("type") == "remove":
            removed.append(str(message.get("id")))
    return removed


def refuse_removals(supersteps: Sequence[Sequence[StateUpdate]]) -> None:
    """Raise ``MessageRemovalError`` when an update removes a message (nothing is written)."""
    removed = [
        message_id
        for superstep in supersteps
        for update in superstep
        for message_id in _removed_ids(update.values)
    ]
    if removed:
        more = f" (and {len(removed) - 1} more)" if len(removed) > 1 else ""
        raise MessageRemovalError(
            f"update_state cannot remove message {removed[0]!r}{more}: topic memory keeps every "
            "message, unsplit or in one topic; fork from a checkpoint before it instead"
        )


class TopicGraph(CompiledStateGraph[Any, Any, Any, Any]):
    """The compiled topic graph, whose state updates never remove a message.

    A run of a user's thread under another user id (``scope/run_scope.py``) is refused too,
    before LangGraph saves its input: a refused input left pending would be finished into
    that thread by its next turn. A user-scope run reads the user's other threads there too
    (``scope/graph_run.py``).
    """

    def stream(  # type: ignore[override]
        self, input: Any, config: RunnableConfig | None = None, **options: Any
    ) -> Iterator[Any]:
        """``stream`` (and ``invoke``), a run of another user's thread refused first.

        In user scope the run's context is given what the user's other threads hold for its
        message (``scope/graph_run.py``), as ``TopicMemory.user`` gives its turns.
        """
        refuse_foreign_run(config, options.get("context"))
        if given_user(config, options.get("context")) is not None:
            options["context"] = scope_context(self, input, config, options.get("context"))
        return super().stream(input, config, **options)

    async def astream(  # type: ignore[override]
        self, input: Any, config: RunnableConfig | None = None, **options: Any
    ) -> AsyncIterator[Any]:
        """``astream`` (and ``ainvoke``, a server's runs), likewise.

        The other threads are read in a worker thread: the server's event loop never waits.
        """
        refuse_foreign_run(config, options.get("context"))
        if given_user(config, options.get("context")) is not None:
            options["context"] = await asyncio.to_thread(
                scope_context, self, input, config, options.get("context")
            )
        async for chunk in super().astream(input, config, **options):
            yield chunk

    def bulk_update_state(
        self, config: RunnableConfig, supersteps: Sequence[Sequence[StateUpdate]]
    ) -> RunnableConfig:
        """``update_state`` (and its bulk form), removals refused first."""
        refuse_removals(supersteps)
        return super().bulk_update_state(config, supersteps)

    async def abulk_update_state(
        self, config: RunnableConfig, supersteps: Sequence[Sequence[StateUpdate]]
    ) -> RunnableConfig:
        """``aupdate_state`` (a LangGraph server's state editor), removals refused first."""
        refuse_removals(supersteps)
        return await super().abulk_update_state(config, supersteps)


def guard_state_updates(graph: CompiledStateGraph[Any, Any, Any, Any]) -> None:
    """Make ``graph`` a :class:`TopicGraph` (its copies, as a server makes them, stay one).

    ``StateGraph.compile`` builds its own class; the subclass only adds the check, so the
    compiled object is kept as it is and its class changed.
    """
    graph.__class__ = TopicGraph
