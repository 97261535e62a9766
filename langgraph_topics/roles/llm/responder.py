"""LLM responder (seed 000 §4.1 step 5, §6.2): strong model with the ``activate_topic`` tool.

While its window shows stored tool results it is offered ``read_namespace`` too (seed 001 T2),
and in a chat turn of a thread with topics ``search_memory`` (issue 38 item 5): the graph
searches the thread and the next window gives the call its reply.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.tools import BaseTool, tool

from langgraph_topics.namespace.tool import READ_NAMESPACE, READ_NAMESPACE_TOOL
from langgraph_topics.retrieval.search_request import SEARCH_MEMORY, search_request
from langgraph_topics.roles.llm.calling import CallPolicy, ModelCaller
from langgraph_topics.roles.llm.language import call_language
from langgraph_topics.roles.llm.xml_reply import ReplyFormatError
from langgraph_topics.roles.protocols import Responder, ResponderReply
from langgraph_topics.state.records import AssembledContext, StoredMessage
from langgraph_topics.state.turn_order import joined_turns
from langgraph_topics.tuning.role_stats import CallRecord

log = logging.getLogger(__name__)


@tool("activate_topic")
def activate_topic(query: str) -> str:
    """Search the earlier conversation's topics and load the ones matching ``query``.

    Call it when the conversation refers to something discussed before that the topic context
    does not cover, or when the user says you forgot something ("you forgot", "I told you
    before", "we talked about this before"). ``query``: what to look for, in a few words.
    """
    return query  # never executed: the graph activates the topics and asks again


ACTIVATE_TOPIC_TOOL: BaseTool = activate_topic


@tool(SEARCH_MEMORY)
def search_memory(query: str, since: str = "", until: str = "") -> str:
    """Find when something was said or decided in this chat: dated originals. Dates YYYY-MM-DD."""
    # The schema is sent with every call of the responder: kept to the words it needs.
    return query  # never executed: the graph searches and answers in the next window


SEARCH_MEMORY_TOOL: BaseTool = search_memory


def chat_messages(context: AssembledContext) -> list[BaseMessage]:
    """The main window as chat messages: the rendered system prompt, then the chat part.

    Tool exchanges are rendered as text: the window may hold a tool result whose call was
    trimmed away, and providers reject such a pair.
    """
    chat = [_as_chat_message(message) for message in context["messages"]]
    if context.get("alternating"):  # tool results shown as text are user messages
        chat = joined_turns(chat)
    return [SystemMessage(context["system_prompt"]), *chat, *search_exchanges(context)]


def search_exchanges(context: AssembledContext) -> list[BaseMessage]:
    """The responder's ``search_memory`` calls this turn, each followed by its reply."""
    exchanges: list[BaseMessage] = []
    for search in context.get("searches") or []:
        call = ToolCall(name=SEARCH_MEMORY, args=dict(search["args"]), id=search["call_id"])
        exchanges.append(AIMessage("", tool_calls=[call]))
        exchanges.append(ToolMessage(search["reply"], tool_call_id=search["call_id"]))
    return exchanges


def _as_chat_message(message: StoredMessage) -> BaseMessage:
    role, text = message["role"], message["content"]
    if role == "assistant":
        return AIMessage(text)
    if role == "tool":
        return HumanMessage(f"[tool result {message.get('name', '')}]\n{text}".strip())
    if role == "system":
        return HumanMessage(f"[system]\n{text}")
    return HumanMessage(text)


def parse_reply(
    reply: AIMessage,
    *,
    can_activate: bool,
    question: str,
    can_read: bool = False,
    can_search: bool = False,
) -> ResponderReply:
    """A text, or a call: ``activate_topic``, ``read_namespace`` or ``search_memory``.

    Raises:
        ReplyFormatError: An empty reply, or a call of a tool that was not offered.
    """
    offered = [
        "activate_topic",
        *([READ_NAMESPACE] if can_read else []),
        *([SEARCH_MEMORY] if can_search else []),
    ]
    for call in reply.tool_calls:
        if call["name"] not in offered:
            raise ReplyFormatError(
                f"unknown tool {call['name']!r}; only {' and '.join(offered)} can be called"
            )
        if call["name"] == SEARCH_MEMORY:
            request = search_request(call.get("args") or {})
            return {"text": reply.text, "activate_query": None, "search_memory": request}
        if call["name"] == READ_NAMESPACE:
            reference = str((call.get("args") or {}).get("reference") or "").strip()
            if not reference:
                raise ReplyFormatError("read_namespace needs the reference, as shown")
            return {"text": reply.text, "activate_query": None, "read_namespace": reference}
        if can_activate:
            args: dict[str, Any] = call.get("args") or {}
            query = str(args.get("query") or "").strip() or question
            return {"text": reply.text, "activate_query": query}
    if not reply.text.strip():
        raise ReplyFormatError("the reply is empty; answer the user")
    return {"text": reply.text, "activate_query": None}


class LlmResponder:
    """Answers from the assembled main window with a chat model.

    ``activate_topic`` is bound as a real tool while activation is possible; a call to it becomes
    ``ResponderReply.activate_query``. A model that cannot bind tools (its ``bind_tools`` raises
    ``NotImplementedError``) is never offered the tool: it just answers (one log line per model
    and process), and weak topic results still search the index before it is called. An empty
    reply is asked again, then answered natively; a provider failure that outlasts its retries
    raises (the node apologises for the turn).

    Args:
        model: The strong model (tool calling lets it ask for earlier topics).
        fallback: The native responder.
        policy: Retries, prompt directory, language preference.
    """

    def __init__(self, model: BaseChatModel, fallback: Responder, policy: CallPolicy) -> None:
        self.policy = policy
        self.fallback = fallback
        self.model = model
        self.plain = ModelCaller("responder", model, policy)
        self.with_tool: ModelCaller | None = None
        """The caller offering ``activate_topic`` (None: the model cannot call tools)."""
        self._callers: dict[tuple[bool, bool, bool], ModelCaller] = {}
        """Callers offering the other tool sets, bound when first needed."""
        self._callers_lock = threading.Lock()
        try:
            bound = model.bind_tools([ACTIVATE_TOPIC_TOOL])
        except NotImplementedError:
            _note_no_tools(self.plain.who)
        else:
            self.with_tool = ModelCaller("responder", bound, policy)

    @property
    def offers_tool(self) -> bool:
        """Whether the model is offered ``activate_topic`` (it can call tools)."""
        return self.with_tool is not None

    def respond(self, context: AssembledContext, *, can_activate: bool) -> ResponderReply:
        """Answer, or ask for topic activation, a stored result or a search through a tool."""
        can_activate = can_activate and self.with_tool is not None
        # read_namespace is offered only while the window shows references it can read, and
        # search_memory while the window allows a search (a chat turn with a round left), so
        # a window offering neither is sent exactly as before.
        can_read = bool(context.get("namespace_refs")) and self.with_tool is not None
        can_search = bool(context.get("can_search")) and self.with_tool is not None
        caller = self._caller(can_activate, can_read, can_search)
        language = call_language(self.policy.language, context["messages"])
        question = _latest_user_text(context["messages"])
        record = CallRecord("responder")

        def parse(reply: AIMessage) -> ResponderReply:
            return parse_reply(
                reply,
                can_activate=can_activate,
                question=question,
                can_read=can_read,
                can_search=can_search,
            )

        return caller.guarded(
            record,
            lambda: caller.ask(
                chat_messages(context),
                parse,
                element="",
                language=language,
                record=record,
                retry_prompt="responder_retry",
            ),
            lambda: self.fallback.respond(context, can_activate=can_activate),
            fallback_on_failure=False,
        )

    def _caller(self, can_activate: bool, can_read: bool, can_search: bool) -> ModelCaller:
        """The caller offering the tools that can be used now."""
        if not (can_activate or can_read or can_search):
            return self.plain
        if can_activate and not (can_read or can_search) and self.with_tool is not None:
            return self.with_tool
        key = (can_activate, can_read, can_search)
        with self._callers_lock:
            caller = self._callers.get(key)
            if caller is None:
                tools = [
                    tool
                    for tool, offered in zip(
                        (ACTIVATE_TOPIC_TOOL, READ_NAMESPACE_TOOL, SEARCH_MEMORY_TOOL),
                        key,
                        strict=True,
                    )
                    if offered
                ]
                caller = ModelCaller("responder", self.model.bind_tools(tools), self.policy)
                self._callers[key] = caller
        return caller


_NO_TOOLS_NOTED: set[str] = set()
_NO_TOOLS_LOCK = threading.Lock()


def _note_no_tools(who: str) -> None:
    """Log, once per model and process, that the responder answers without ``activate_topic``."""
    with _NO_TOOLS_LOCK:
        if who in _NO_TOOLS_NOTED:
            return
        _NO_TOOLS_NOTED.add(who)
    log.warning(
        "%s cannot call tools (bind_tools is not implemented): answering without "
        "activate_topic; weak topic results still search the index",
        who,
    )


def _latest_user_text(messages: Sequence[StoredMessage]) -> str:
    return next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
