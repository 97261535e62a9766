"""Topic memory as middleware of a LangChain agent (``langchain.agents.create_agent``).

Where the topic state lives
===========================

The thread's topic state (working set, topic registry, message counters, the topic-store
ranges of the branch, the last assembled window and its topic results) lives in the
:class:`~langgraph_topics.memory.TopicMemory`'s own checkpointer, under the agent's thread id
(``config["configurable"]["thread_id"]``). The agent's checkpoint keeps only the agent's loop
state: its ``messages`` and, during a model call, the window sent to the model.

Why not extend the agent's state with the ``TopicState`` keys (as ``topic_context_node`` does
for a graph of one's own)? Because then two records would describe one conversation, and the
one the tools read would not be the one the agent writes: ``TopicMemory.check(thread)``,
``transcript``, ``topics``, ``context``, the ``langgraph-topics`` command and the tuning log all
read the memory's checkpointer, and the invariants are proved there (every message counted in
``total_messages`` is either in the working set or in exactly one topic file, and the last
window holds the last messages). Keeping the state in the memory makes ``check(thread)`` audit
exactly what the agent's model was given, with the memory's own locks (one writer per thread,
also across processes) and crash recovery (a memory turn cut short is finished by the next
model call). The price: forking or time-travelling the *agent's* thread does not fork the
memory, which follows its own newest checkpoint (fork the memory with
``TopicMemory.run_turn(..., checkpoint_id=...)``).

The agent's ``messages`` mirror the memory's working set: messages the memory moved into topic
files are removed from them (``RemoveMessage``), so the agent's checkpoint stays bounded like
the memory's, while every message stays recoverable (``TopicMemory.transcript``).

One model call of the agent loop
================================

``wrap_model_call``
    Counts the agent's own parts of the request with the package's token counter (its system
    prompt, the bound tools' schemas): the memory's window gets ``budget_tokens`` minus them,
    and a budget leaving it under ``MIN_BUDGET_TOKENS`` is refused here, with one line,
    before anything is recorded. Then it records the messages of ``messages`` the memory does
    not hold yet and, for the first call of a user turn, runs one topic-memory turn in mode
    ``"assemble"`` (estimate; split when over 70 % of the budget; topic windows in parallel;
    weak-results activation; assembly). It sends the window instead of the agent's messages:
    one system message (the agent's ``system_prompt``, then topic memory's prompt with the
    topic results and quotes), then the unsplit and recent messages. A tool call and its
    results are one piece of the window (invariant 8). The window and the removal of the
    split messages from the agent's ``messages`` come back as the response's command (the
    private state key ``topic_window`` holds the window until the reply is recorded).
``after_model``
    Records the reply with its tool calls; the first reply of a user turn also runs the
    bookkeeping of the turn (scores, grey activation, dormancy, the tuning log line). The
    tool results are recorded by the next model call (the agent always calls the model after
    its tools), or by ``after_agent`` when a ``return_direct`` tool ended the run.

One memory turn per user turn: the later model calls of the same user turn (tool rounds,
retries) record the new tool exchange and assemble the window again from that turn's topic
results (:mod:`~langgraph_topics.integrations.tool_rounds`), with no estimate, split, topic
windows or bookkeeping; a call after ``activate_topic`` woke topics runs a whole turn, so
that the woken topics are read.

``activate_topic``
==================

The middleware registers the ``activate_topic`` tool (the one the graph's own responder is
offered, same description) and offers it to the model when the model can bind tools and the
thread has dormant topics. Calling it searches the topic index and the message index for the
query and activates the best dormant topics, as the graph's ``activate`` node does; the tool's
answer names them, and the next model call (the agent's loop calls the model again after its
tools) reads them with the other active topics and quotes them in its window. The activation
is written after the calling turn's bookkeeping, so a topic just woken up is not put back to
sleep before it has been read; its events reach the custom stream of the agent (``activated``)
and the memory's state, not that turn's tuning-log line (already written).

``search_memory``
=================

The middleware registers ``search_memory`` (:mod:`~langgraph_topics.integrations.search_tool`)
and offers it to the model when the model can bind tools and part of the thread has left the
window (the thread has topics): a question about the conversation itself ("when did we decide
to use JWT?") gets the best original messages of the whole thread, each with the time it was
sent, its id and its topic, as the tool's answer (which the memory records like any tool
result). ``TopicMemory.search`` answers it, related words of the thread included; the current
user turn's own messages are left out.

``read_namespace``
==================

A tool result over 2,048 bytes or 50 lines (seed 001 T2; ``Settings.large_tools`` are always
large) reaches the model as its ``namespace://tool/<hash>`` reference and a preview; the
memory's files keep the full text. While the window shows such a reference the model is offered
``read_namespace``: the tool checks the reference and the next model call's window shows that
text in full (within the budget), once; later calls see the reference again.

A user's threads
================

With ``Settings.memory_scope="user"``, a run naming a user (``context.user_id`` or
``configurable.user_id``, read as the graph reads them: ``scope.run_scope.agent_thread``) works
on that user's thread of the agent's thread id, stored apart from every other user's, and the
first model call of each user message reads the user's most recently active other threads
(``UserMemory.enter``, before this thread's locks) and hands their quotes to the turn as
``TopicMemory.user`` does: the window quotes them as the graph's does (``scope/window.py``), in
that call and in the turn's tool rounds. In ``thread`` scope, or without a user, the thread is
the agent's thread id and nothing more is done. A bad user id, or a thread stored as another
user's, stops the model call with one line before anything is recorded.

Place the middleware first in ``create_agent(middleware=[...])``: its ``wrap_model_call`` is then
the outermost (the other middleware see the window) and its ``after_model`` runs last (it
records the reply as the other middleware left it).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Annotated, Any, NotRequired, cast

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
)
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import ExecutionInfo, Runtime, get_runtime
from langgraph.types import Command
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from langgraph_topics.integrations.messages import context_messages
from langgraph_topics.integrations.search_tool import SEARCH_MEMORY, search_memory_tool
from langgraph_topics.integrations.tool_rounds import (
    continues_user_turn,
    stamped,
    tool_round_update,
)
from langgraph_topics.memory import TopicMemory
from langgraph_topics.middleware.request_tokens import FixedParts, request_tokens, tools_tokens
from langgraph_topics.namespace.reference import find_references
from langgraph_topics.namespace.tool import READ_NAMESPACE, READ_NAMESPACE_TOOL
from langgraph_topics.nodes.activate import activate
from langgraph_topics.nodes.bookkeeping import bookkeeping
from langgraph_topics.roles.llm.responder import ACTIVATE_TOPIC_TOOL
from langgraph_topics.scope.run_scope import agent_thread
from langgraph_topics.scope.threads import local_thread_id
from langgraph_topics.scope.topic_reading import ScopeReading
from langgraph_topics.services import TopicContext, TopicServices
from langgraph_topics.settings import MIN_BUDGET_TOKENS
from langgraph_topics.state.messages import text_of
from langgraph_topics.state.records import ActivationRequest, AssembledContext
from langgraph_topics.state.schema import TopicState
from langgraph_topics.stores.namespace_store import NamespaceEntryError

ACTIVATE_TOPIC = "activate_topic"
"""Name of the tool the middleware registers."""

_OWN_TOOLS = (ACTIVATE_TOPIC, READ_NAMESPACE, SEARCH_MEMORY)
"""The tools the middleware registers (offered only while they help), the one that gives way
last to the budget first."""

OWN_TOOLS_SHARE = 0.15
"""Room is kept for the memory's own tools when they take at most this share of its part."""

_LAST_NODE = "bookkeeping"
"""The memory graph's last node: writes recorded as its output leave nothing to run."""


class ModelCallWindow(TypedDict):
    """What ``before_model`` assembled for the coming model call."""

    context: AssembledContext
    """The assembled main window (also the memory's ``state["context"]``)."""
    turn: int
    """The memory's turn that assembled it (one per user turn)."""
    can_activate: bool
    """Whether the thread has dormant topics that ``activate_topic`` could wake."""
    can_search: NotRequired[bool]
    """Whether part of the thread has left the window (it has topics): ``search_memory``
    can reach what the window does not show."""
    withheld: NotRequired[list[str]]
    """The memory's own tools the budget has no room for in this call."""
    closes_turn: NotRequired[bool]
    """Whether the reply closes the memory turn (its bookkeeping): the first call of a user
    turn does; its tool rounds, which ran no memory turn, do not."""


class TopicAgentState(AgentState[Any]):
    """The agent's state with the middleware's private key (not part of input or output)."""

    topic_window: NotRequired[Annotated[ModelCallWindow | None, PrivateStateAttr]]
    """The window of the model call under way; cleared once the reply is recorded."""


class _ReadNamespaceInput(BaseModel):
    reference: str = Field(description="The namespace://tool/... reference, as shown.")


class _ActivateTopicInput(BaseModel):
    query: str = Field(description="What to look for in the earlier conversation, in a few words.")


def supports_tools(model: BaseChatModel) -> bool:
    """Whether ``model`` implements ``bind_tools`` (the base class only raises)."""
    return getattr(type(model), "bind_tools", None) is not BaseChatModel.bind_tools


class TopicMemoryMiddleware(AgentMiddleware[TopicAgentState, Any, Any]):
    """Topic memory for ``create_agent``: the model sees the assembled window, not the history.

    Example:
        >>> memory = TopicMemory("./memory", budget_tokens=4000)  # doctest: +SKIP
        >>> agent = create_agent(  # doctest: +SKIP
        ...     "openai:gpt-4o", [search], middleware=[TopicMemoryMiddleware(memory)],
        ...     checkpointer=InMemorySaver(),
        ... )
        >>> agent.invoke({"messages": [("user", "Where did we stay in Kyoto?")]},  # doctest: +SKIP
        ...              {"configurable": {"thread_id": "alice"}})

    Args:
        memory: Where the conversation lives; its thread is the agent's thread id (see the
            module docstring for why the topic state stays there). A run without a thread id
            uses the memory's ``default`` thread, so even an agent without a checkpointer
            remembers: send it only the new message.
        activate_topic: Offer the ``activate_topic`` tool while the thread has dormant topics:
            ``None`` (default) when the model can bind tools, ``True`` always, ``False`` never
            (the tool is then not registered either).
        read_namespace: Offer the ``read_namespace`` tool while the window shows large tool
            results by reference (seed 001 T2): ``None`` (default) when the model can bind
            tools (not registered when ``activate_topic`` is ``False``), ``True`` always,
            ``False`` never.
        search_memory: Offer the ``search_memory`` tool (dated original messages of the
            whole thread, for "when did we decide…") once part of the thread has left the
            window: ``None`` (default) when the model can bind tools (not registered when
            ``activate_topic`` is ``False``), ``True`` always, ``False`` never.
    """

    state_schema = TopicAgentState

    def __init__(
        self,
        memory: TopicMemory,
        *,
        activate_topic: bool | None = None,
        read_namespace: bool | None = None,
        search_memory: bool | None = None,
    ) -> None:
        super().__init__()
        self.memory = memory
        self.offer_activation = activate_topic
        self.offer_reading = read_namespace
        self.offer_search = search_memory
        # An agent refusing the memory's tools gets none.
        if read_namespace is None:
            read_namespace = activate_topic is not False
        if search_memory is None:
            search_memory = activate_topic is not False
        self.tools: Sequence[BaseTool] = [
            *([] if activate_topic is False else [self._activate_topic_tool()]),
            *([self._read_namespace_tool()] if read_namespace else []),
            *(
                [
                    search_memory_tool(
                        memory, thread_of=self._tool_thread, elsewhere=self._search_elsewhere
                    )
                ]
                if search_memory
                else []
            ),
        ]
        self._pending_reads: dict[str, list[str]] = {}
        """References ``read_namespace`` validated, per thread, for the next model call."""
        self._woken: set[str] = set()
        self._recorded_last: dict[str, str | None] = {}
        """Per thread, the id of the last agent message ``_record`` recorded (in this process)."""
        """Threads where ``activate_topic`` woke topics: their next call runs a whole turn,
        so that the woken topics are read."""
        self._scope_quotes: dict[str, tuple[str | None, ScopeReading]] = {}
        """Per thread (user scope), the user message the other threads were read for, and
        what they held: the turn's later calls (tool rounds, retries) reuse it."""
        self._reads_lock = threading.Lock()

    # -- the hooks ---------------------------------------------------------------------------

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ExtendedModelResponse[Any]:
        """Assemble the window (once per user turn), then call the model with it.

        The window is assembled here rather than in ``before_model`` because only the model
        request shows the agent's system prompt and bound tools, which the budget covers.

        Raises:
            InputError: The budget leaves topic memory under ``MIN_BUDGET_TOKENS`` once the
                agent's system prompt and tools are counted (before anything is recorded).
        """
        window, removals = self.prepare(request)
        response = handler(self.windowed(request, window))
        return self._extended(response, window, removals)

    def after_model(self, state: TopicAgentState, runtime: Runtime[Any]) -> dict[str, Any]:
        """Record the reply (with its tool calls); the first reply of a user turn closes it."""
        window = state.get("topic_window")
        turn = window["turn"] if window and window.get("closes_turn", True) else None
        update: dict[str, Any] = {"topic_window": None}
        removals = self._record(self.memory_thread(runtime)[0], state, turn=turn)
        if removals:
            update["messages"] = removals
        return update

    def after_agent(self, state: TopicAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Record what came after the last model call (results of ``return_direct`` tools)."""
        thread_id = self.memory_thread(runtime)[0]
        messages = state["messages"]
        with self._reads_lock:
            last = self._recorded_last.get(thread_id)
            self._scope_quotes.pop(thread_id, None)  # the run is over: its user turn too
        if messages and last is not None and messages[-1].id == last:
            # The run ended with the reply ``after_model`` just recorded (the usual end):
            # nothing to read, lock or write (a split landing now is removed next call).
            return None
        removals = self._record(thread_id, state, turn=None)
        return {"messages": removals} if removals else None

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ExtendedModelResponse[Any]:
        """``wrap_model_call`` for asyncio: the memory's work runs in a worker thread."""
        window, removals = await asyncio.to_thread(self.prepare, request)
        response = await handler(self.windowed(request, window))
        return self._extended(response, window, removals)

    async def aafter_model(self, state: TopicAgentState, runtime: Runtime[Any]) -> dict[str, Any]:
        """``after_model`` in a worker thread."""
        return await asyncio.to_thread(self.after_model, state, runtime)

    async def aafter_agent(
        self, state: TopicAgentState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """``after_agent`` in a worker thread."""
        return await asyncio.to_thread(self.after_agent, state, runtime)

    @staticmethod
    def _extended(
        response: ModelResponse[Any] | AIMessage,
        window: ModelCallWindow,
        removals: list[RemoveMessage],
    ) -> ExtendedModelResponse[Any]:
        """The model's response with the window and the split messages' removal as a command."""
        if isinstance(response, AIMessage):
            response = ModelResponse(result=[response])
        update: dict[str, Any] = {"topic_window": window}
        if removals:
            update["messages"] = removals
        return ExtendedModelResponse(model_response=response, command=Command(update=update))

    # -- the window --------------------------------------------------------------------------

    def prepare(self, request: ModelRequest[Any]) -> tuple[ModelCallWindow, list[RemoveMessage]]:
        """The window of this model call, and the agent's messages the memory split away.

        The first call of a user turn records the new messages and runs one memory turn in mode
        ``"assemble"`` (estimate; split when over 70 % of the budget; topic windows; weak-results
        activation; assembly). Later calls of the same turn (tool rounds, retries) record the
        new tool exchange and assemble again from that turn's topic results
        (:mod:`~langgraph_topics.integrations.tool_rounds`): no fan-out, no split.
        """
        thread_id, user_id = self.memory_thread(request.runtime)
        messages = request.state["messages"]
        counter = self.memory.services.token_counter
        budget = self.memory.settings.budget_tokens
        system = _system_text(request.system_message)
        own = [t for t in request.tools if _tool_name(t) in _OWN_TOOLS]
        app_tools = [t for t in request.tools if _tool_name(t) not in _OWN_TOOLS]
        # The app's own parts first: a budget they leave too little of is refused before
        # anything is recorded.
        part = FixedParts.of(system, app_tools, counter).memory_budget(budget)
        # Before this thread's locks: the other threads are read under their own.
        quotes = self._turn_quotes(thread_id, user_id, messages)
        with self._reads_lock:
            reads = self._pending_reads.pop(thread_id, [])
            woken = thread_id in self._woken
            self._woken.discard(thread_id)
        with self._writing(thread_id):
            values = self.memory.state(thread_id)
            fresh = self._unrecorded(thread_id, values, messages)
            # The memory's own tools are sent only while they help (dormant topics, stored
            # tool results shown): room is kept for the ones that may be offered.
            maybe = [
                t
                for t in own
                if (_tool_name(t) == ACTIVATE_TOPIC and _can_activate(values, quotes))
                or (_tool_name(t) == READ_NAMESPACE and bool(_last_refs(values)))
                or (_tool_name(t) == SEARCH_MEMORY and _can_search(values, quotes))
            ]
            # ... as many as take a small share of it, in ``_OWN_TOOLS`` order: under a tight
            # budget the window keeps the room and the others are offered only if they still
            # fit (``_fit``).
            reserve = 0
            for tool in sorted(maybe, key=lambda t: _OWN_TOOLS.index(_tool_name(t) or "")):
                cost = tools_tokens([tool], counter)
                if reserve + cost > OWN_TOOLS_SHARE * part:
                    break
                reserve += cost
            part -= reserve
            if not woken and continues_user_turn(values, fresh, messages):
                new = stamped(fresh, self.memory.services.clock().isoformat())
                update = tool_round_update(
                    values, new, self._runtime(thread_id, self._services(part), quotes), reads=reads
                )
                self._commit(thread_id, update)
                window: ModelCallWindow = {
                    "context": update["context"],
                    "turn": values.get("turn", 0),
                    "can_activate": _can_activate(values, quotes),
                    "can_search": _can_search(values, quotes),
                    "closes_turn": False,
                }
                removals = _split_away(values, messages, new)
            else:
                turn_input: dict[str, Any] = {"messages": fresh, "mode": "assemble"}
                if reads:
                    turn_input["read_namespace"] = reads
                result = self.memory.run_turn(
                    thread_id,
                    turn_input,
                    services=self._services(part),
                    user_id=user_id,
                    scope_quotes=quotes,
                )
                kept = {m.id for m in result["messages"]}
                removals = [RemoveMessage(id=m.id) for m in messages if m.id and m.id not in kept]
                window = {
                    "context": result["context"],
                    "turn": result.get("turn", 0),
                    "can_activate": _can_activate(result, quotes),
                    "can_search": _can_search(result, quotes),
                    "closes_turn": True,
                }
            self._fit(thread_id, request, window, part, reads, quotes)
        return window, removals

    def memory_thread(self, runtime: Runtime[Any] | None = None) -> tuple[str, str | None]:
        """The memory's thread of this run, and the user whose other threads it reads.

        The agent's thread id, or in ``user`` scope (``Settings.memory_scope``) for a run
        naming a user (``context.user_id`` or ``configurable.user_id``, as the graph reads
        it) that user's thread of that name (``scope.run_scope.agent_thread``).

        Raises:
            InputError: An invalid user id, or a thread stored as another user's (one line,
                before anything is read or written).
        """
        return agent_thread(runtime, self.memory.settings.memory_scope)

    def _tool_thread(self) -> str:
        """``memory_thread`` of the run calling one of the memory's tools."""
        try:
            runtime: Runtime[Any] | None = get_runtime()
        except RuntimeError:  # called outside a run
            runtime = None
        return self.memory_thread(runtime)[0]

    def _turn_quotes(
        self, thread_id: str, user_id: str | None, messages: Sequence[AnyMessage]
    ) -> ScopeReading:
        """What the user's other threads hold for this user turn (none without a user).

        Read once per user message (``UserMemory.enter``: the thread recorded as the user's
        most recently active, then the most recently active others read, each under its own
        files lock); the turn's later calls reuse it, so the window keeps its quotes through
        the tool rounds. A plain agent does nothing here.
        """
        if user_id is None:
            return ScopeReading([])
        last = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
        if last is None:
            return ScopeReading([])
        with self._reads_lock:
            cached = self._scope_quotes.get(thread_id)
        if cached is not None and cached[0] == last.id:
            return cached[1]
        person = self.memory.user(user_id, scope="user")
        quotes = person.enter(local_thread_id(thread_id), text_of(last))
        with self._reads_lock:
            self._scope_quotes[thread_id] = (last.id, quotes)
        return quotes

    def _services(self, part: int) -> TopicServices:
        """The memory's services with ``part`` as the window's budget."""
        services = self.memory.services
        if part == services.settings.budget_tokens:
            return services
        return services.with_run_settings({"budget_tokens": part})

    def _fit(
        self,
        thread_id: str,
        request: ModelRequest[Any],
        window: ModelCallWindow,
        part: int,
        reads: list[str],
        quotes: ScopeReading | None = None,
    ) -> None:
        """Assemble ``window`` again, smaller, while the whole request passes the budget.

        Rare: a tool the window made worth offering (``read_namespace`` once a stored result
        is shown, ``activate_topic`` once a topic fell asleep) that no room was kept for, or a
        tokenizer merging across the seam of the two system prompts. Only the assembly runs
        again, from the topic results the memory holds; the writer lock is held.
        """
        counter = self.memory.services.token_counter
        budget = self.memory.settings.budget_tokens
        for _ in range(len(_OWN_TOOLS) + 3):
            sent = self.windowed(request, window)
            excess = (
                request_tokens(sent.system_message, sent.messages, sent.tools, counter) - budget
            )
            if excess <= 0:
                return
            own = [name for t in sent.tools if (name := _tool_name(t)) in _OWN_TOOLS]
            if own:
                # The memory's own tools give way first, the last of ``_OWN_TOOLS`` first:
                # the window is what recalls.
                last = max(own, key=_OWN_TOOLS.index)
                window["withheld"] = [*window.get("withheld", []), last]
                continue
            if part <= MIN_BUDGET_TOKENS:
                return
            part = max(MIN_BUDGET_TOKENS, part - excess)
            values = self.memory.state(thread_id)
            runtime = self._runtime(thread_id, self._services(part), quotes)
            update = tool_round_update(values, [], runtime, reads=reads)
            self._commit(thread_id, update)
            window["context"] = update["context"]

    def windowed(
        self, request: ModelRequest[Any], window: ModelCallWindow | None = None
    ) -> ModelRequest[Any]:
        """The request with the window's messages, and the memory's tools only when they help.

        Without a window the messages are left as they are.
        """
        own = window is not None
        withheld = set(window.get("withheld", [])) if window is not None else set()
        offer = (
            own
            and window is not None
            and window["can_activate"]
            and self.offer_activation is not False
            and (self.offer_activation or supports_tools(request.model))
        )
        readable = (
            own
            and window is not None
            and bool(window["context"].get("namespace_refs"))
            and (self.offer_reading or supports_tools(request.model))
        )
        searchable = (
            own
            and window is not None
            and window.get("can_search", False)
            and (self.offer_search or supports_tools(request.model))
        )
        tools = [
            t
            for t in request.tools
            if (offer or _tool_name(t) != ACTIVATE_TOPIC)
            and (readable or _tool_name(t) != READ_NAMESPACE)
            and (searchable or _tool_name(t) != SEARCH_MEMORY)
            and _tool_name(t) not in withheld
        ]
        if window is None:
            return request.override(tools=tools)
        sent = context_messages(window["context"], _system_text(request.system_message))
        return request.override(
            system_message=cast(SystemMessage, sent[0]), messages=sent[1:], tools=tools
        )

    # -- recording ---------------------------------------------------------------------------

    @contextmanager
    def _writing(self, thread_id: str) -> Iterator[None]:
        """Hold the thread's writer and file locks; keep the memory's model calls unstreamed.

        The memory's own model calls (topic windows, splitter, brief writer, router) run inside
        the agent's step and would otherwise reach the agent's ``messages`` stream (with
        ``subgraphs=True``) as if the agent had said them.
        """
        current = var_child_runnable_config.get()
        token = None
        if current is not None:
            tags = [*(current.get("tags") or []), TAG_NOSTREAM]
            token = var_child_runnable_config.set({**current, "tags": tags})
        try:
            with self.memory.writing(thread_id), self._files(thread_id):
                yield
        finally:
            if token is not None:
                var_child_runnable_config.reset(token)

    @contextmanager
    def _files(self, thread_id: str) -> Iterator[None]:
        """The memory's file lock of the thread (reads of its stores must hold it)."""
        with self.memory.reading(thread_id):
            yield

    def _unrecorded(
        self, thread_id: str, values: dict[str, Any], messages: Sequence[AnyMessage]
    ) -> list[AnyMessage]:
        """The agent's messages that the memory (its state ``values``) does not hold, in order.

        Held means in the working set or in a topic file of the branch; the file lock is held.
        """
        working = {m.id for m in values.get("messages", [])}
        store = self.memory.services.branch_stores(thread_id, values).topic_store
        return [m for m in messages if m.id not in working and store.locate(m.id or "") is None]

    def _record(
        self, thread_id: str, state: TopicAgentState, *, turn: int | None
    ) -> list[RemoveMessage]:
        """Add the agent's unrecorded messages to the memory, closing memory turn ``turn``.

        The bookkeeping runs with the reply, once: only while ``turn`` is still the memory's
        newest turn (no other writer ran one since) and the reply is not recorded yet (a
        repeated ``after_model``, e.g. after a crash, changes nothing). The write is a state
        update of the memory's graph as its last node, so the memory's checkpoint shows a
        finished turn: nothing left to run, nothing for ``resume``.

        Returns:
            The removal of the agent's messages the memory split meanwhile (a split runs
            after the reply that made it due: ``Settings.split_after_reply``).
        """
        with self._writing(thread_id):
            values = self.memory.state(thread_id)
            fresh = self._unrecorded(thread_id, values, state["messages"])
            if not fresh:
                return _split_away(values, state["messages"], [])
            close_turn = turn is not None and turn == values.get("turn")
            new = stamped(fresh, self.memory.services.clock().isoformat())
            update: dict[str, Any] = {}
            if close_turn and values.get("context"):
                update = bookkeeping(cast(TopicState, values), self._runtime(thread_id))
            if new:
                update["messages"] = new
                update["total_messages"] = values.get("total_messages", 0) + len(new)
                update["last_seen_id"] = new[-1].id
            if update:
                self._commit(thread_id, update)
            with self._reads_lock:
                self._recorded_last[thread_id] = new[-1].id if new else None
            return _split_away(values, state["messages"], new)

    def _commit(self, thread_id: str, update: dict[str, Any]) -> None:
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        self.memory.graph.update_state(config, update, as_node=_LAST_NODE)

    def _runtime(
        self,
        thread_id: str,
        services: TopicServices | None = None,
        quotes: ScopeReading | None = None,
    ) -> Runtime[TopicContext]:
        """A runtime for the memory's node functions, naming the memory's thread.

        ``quotes``: what the user turn read of the user's other threads (user scope), which
        the assembly puts in the window as the graph's does.
        """
        info = ExecutionInfo(checkpoint_id="", checkpoint_ns="", task_id="", thread_id=thread_id)
        context = TopicContext(services=services or self.memory.services, scope_quotes=quotes)
        return Runtime(context=context, execution_info=info)

    # -- activate_topic ----------------------------------------------------------------------

    def _activate_topic_tool(self) -> BaseTool:
        def run(query: str) -> str:
            return self.activate(self._tool_thread(), query)

        async def arun(query: str) -> str:
            return await asyncio.to_thread(run, query)

        return StructuredTool.from_function(
            func=run,
            coroutine=arun,
            name=ACTIVATE_TOPIC,
            description=ACTIVATE_TOPIC_TOOL.description,
            args_schema=_ActivateTopicInput,
            infer_schema=False,
        )

    def _turn_reading(self, thread_id: str) -> ScopeReading:
        """What the user turn under way read of the user's other threads.

        The reading the turn's tools search again (nothing outside a user's run).
        """
        with self._reads_lock:
            cached = self._scope_quotes.get(thread_id)
        return cached[1] if cached is not None else ScopeReading([])

    def _search_elsewhere(
        self, thread_id: str, query: str, since: datetime | None, until: datetime | None
    ) -> int:
        """``search_memory`` in user scope: the user's other threads searched too.

        What they hold joins the user turn's quotes of them (the next model call shows them);
        how many messages that is.
        """
        return self._turn_reading(thread_id).search(query, since, until)[0]

    def activate(self, thread_id: str, query: str) -> str:
        """Wake the dormant topics of ``thread_id`` that match ``query``; says which.

        The index search and the choice are the graph's ``activate`` node's; the woken topics
        are read by the next turn (the agent's next model call). In user scope the user's other
        threads are searched too: what they hold joins the turn's quotes of them.
        """
        messages, topics_read = self._turn_reading(thread_id).search(
            query.strip() or "earlier conversation"
        )
        elsewhere = (
            f" Your other conversations hold {messages} matching messages"
            + (f" and {topics_read} matching topics" if topics_read else "")
            + ": they are in your context from the next call."
            if messages or topics_read
            else ""
        )
        with self._writing(thread_id):
            values = self.memory.state(thread_id)
            topics = values.get("topics") or {}
            if not any(t["status"] == "dormant" for t in topics.values()):
                if elsewhere:
                    return elsewhere.strip()
                return "Nothing was set aside: every earlier topic is already in your context."
            request: ActivationRequest = {
                "query": query.strip() or "earlier conversation",
                "reason": "tool_call",
                "deep": False,
            }
            update = activate(
                cast(TopicState, {**values, "activation": request}), self._runtime(thread_id)
            )
            woken = [
                record["name"]
                for topic_id, record in update["topics"].items()
                if record["status"] == "active" and topics[topic_id]["status"] == "dormant"
            ]
            self._commit(
                thread_id,
                {
                    key: update[key]
                    for key in ("topics", "events", "activation", "activation_rounds", "searched")
                },
            )
        if not woken:
            return elsewhere.strip() or f"No earlier topic matches {request['query']!r}."
        with self._reads_lock:
            self._woken.add(thread_id)
        return (
            f"Recalled {', '.join(woken)}: the earlier messages on "
            f"{'it' if len(woken) == 1 else 'them'} are in your context from the next call."
            + elsewhere
        )

    # -- read_namespace ----------------------------------------------------------------------

    def _read_namespace_tool(self) -> BaseTool:
        def run(reference: str) -> str:
            return self.read_namespace(self._tool_thread(), reference)

        async def arun(reference: str) -> str:
            return await asyncio.to_thread(run, reference)

        return StructuredTool.from_function(
            func=run,
            coroutine=arun,
            name=READ_NAMESPACE,
            description=READ_NAMESPACE_TOOL.description,
            args_schema=_ReadNamespaceInput,
            infer_schema=False,
        )

    def read_namespace(self, thread_id: str, reference: str) -> str:
        """Show the stored tool result ``reference`` names in full in the next model call.

        The reference may be embedded in other text; an unknown one, or a damaged entry, is
        answered with one line for the model (the message itself stays in the topic files).
        """
        found = find_references(reference)
        if not found:
            return (
                f"{reference.strip()[:80]!r} is not a namespace://tool/… reference; "
                "pass one as shown in your context."
            )
        target = found[0]
        try:
            with self._files(thread_id):
                store = self.memory.services.stores(thread_id).namespace_store
                content = store.read(target)
        except NamespaceEntryError as error:
            return f"{target} could not be read ({error}); answer from its preview."
        if content is None:
            return (
                f"No stored tool result has the reference {target} (unknown or mistyped); "
                "answer from the previews you have."
            )
        with self._reads_lock:
            pending = self._pending_reads.setdefault(thread_id, [])
            if target not in pending:
                pending.append(target)
        return f"The full text of {target} is in your context for your next call."


def _tool_name(tool: BaseTool | dict[str, Any]) -> str | None:
    if isinstance(tool, BaseTool):
        return tool.name
    name = tool.get("name")
    return name if isinstance(name, str) else None


def _system_text(message: SystemMessage | None) -> str | None:
    return text_of(message) if message is not None else None


def _can_activate(values: dict[str, Any], quotes: ScopeReading) -> bool:
    """Whether ``activate_topic`` has something to look at.

    Dormant topics, or (user scope) the user's other threads (``ScopeReading.searches``).
    """
    dormant = any(t["status"] == "dormant" for t in (values.get("topics") or {}).values())
    return dormant or quotes.searches


def _can_search(values: dict[str, Any], quotes: ScopeReading) -> bool:
    """Whether ``search_memory`` reaches something the window lacks.

    Part of the thread (it has topics), or (user scope) the user's other threads.
    """
    return bool(values.get("topics")) or quotes.searches


def _split_away(
    values: dict[str, Any], messages: Sequence[AnyMessage], new: Sequence[BaseMessage]
) -> list[RemoveMessage]:
    """Removals of the agent's ``messages`` that left the memory's working set (split).

    ``values`` is the memory's state before ``new`` (just recorded) joined its working set.
    """
    held = {m.id for m in values.get("messages", [])} | {m.id for m in new}
    return [RemoveMessage(id=m.id) for m in messages if m.id and m.id not in held]


def _last_refs(values: dict[str, Any]) -> list[str]:
    """The stored tool results the thread's last window showed by reference."""
    context = values.get("context") or {}
    return list(context.get("namespace_refs") or [])
