"""Property tests: whatever the model replies and however tool exchanges are ordered, no message
is lost and no tool result is separated from its call.

Model replies: every LLM role, fed arbitrary text, truncated or duplicated XML, unknown ids and
bad scores, returns a usable answer (its own or the native back end's) and never raises.

Conversations: random histories of user and assistant messages and tool exchanges (results in
any order, calls left unanswered, results arriving after a later user message) are imported, then
chatted on and queried; the transcript, the invariant check, the topic files and the window keep
every message, each once, and every tool result with its call.

Property tests of thread names and of import records live in ``test_reliability.py``.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from html import escape
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest
from fakes import context_of
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.errors import InputError
from langgraph_topics.prompts import load_prompt
from langgraph_topics.roles.llm import (
    CallPolicy,
    LlmBriefWriter,
    LlmIndexRouter,
    LlmResponder,
    LlmSplitter,
    LlmTopicWindow,
    ReplyFormatError,
)
from langgraph_topics.roles.llm.brief_writer import MAX_NAME_CHARS, parse_brief
from langgraph_topics.roles.llm.index_router import parse_routing
from langgraph_topics.roles.llm.retries import Backoff
from langgraph_topics.roles.llm.splitter import parse_plan
from langgraph_topics.roles.llm.topic_window import parse_verdict
from langgraph_topics.roles.native import native_roles
from langgraph_topics.roles.protocols import Roles, TopicInfo
from langgraph_topics.splitting.prepared import resolve_plan
from langgraph_topics.state.records import AssembledContext, StoredMessage

T = TypeVar("T")

EMBEDDER = HashEmbedder()
BRIEF_BYTES = 256
NATIVE = native_roles(EMBEDDER, Settings(budget_tokens=350, keep_recent=4, brief_bytes=BRIEF_BYTES))
"""The native back ends the LLM roles fall back on."""
POLICY = CallPolicy(backoff=Backoff(retries=2, base_seconds=0.001), format_retries=1, language="en")

REPLY_RUNS = settings(max_examples=15, deadline=None, derandomize=True, database=None)
"""Role calls are cheap: a few more examples, shrunk on failure."""
FEW_RUNS = settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # a whole conversation is too slow to shrink
)

_threads = itertools.count()


# ------------------------------------------------------------------------- a scripted model

ReplySource = Callable[[Sequence[BaseMessage], bool], AIMessage]
"""Answers a prompt; the flag says whether tools are bound."""


class ScriptedChatModel(BaseChatModel):
    """A chat model whose replies come from ``source`` (tools can be bound, and are noted)."""

    source: Any

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self.source(messages, bool(kwargs.get("tools")))
        return ChatResult(generations=[ChatGeneration(message=reply.model_copy())])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        return self.bind(tools=[getattr(t, "name", str(t)) for t in tools], **kwargs)


class Replies:
    """Hands out fixed replies in turn (cycling); counts the calls."""

    def __init__(self, replies: Sequence[AIMessage]) -> None:
        self.replies = list(replies)
        self.asked = 0

    def __call__(self, messages: Sequence[BaseMessage], tools: bool) -> AIMessage:
        reply = self.replies[self.asked % len(self.replies)]
        self.asked += 1
        return reply


# ------------------------------------------------------------------ replies, valid or not


class Pick(Protocol):
    """A source of choices: hypothesis draws (shrinkable) or a seeded ``random.Random``."""

    def choice(self, options: Sequence[T]) -> T: ...

    def number(self, low: int, high: int) -> int: ...

    def text(self) -> str: ...


TRICKY = [
    "",
    "   ",
    "&",
    "&amp;&lt;",
    "<",
    "</topic_result>",
    "<relevance_score>1.0</relevance_score>",
    '<assignment msg_id="h0" topic="new" topic_name="x">',
    "</topic_split>",
    "<topic_brief>",
    '<topic id="topic-nope" relevance="high">',
    "Kyoto ryokan near Gion, 30,000 yen",
    "京都的旅馆在祇园附近",
    "🙂 sourdough starter",
    "x" * 300,
]
UNKNOWN_IDS = ["msg-999", "h999", "topic-nope", "m1 m2", "-", ""]
SCORES = ["0", "1", "0.5", "0.73", " 0.9 ", "1e-2", "1.7", "-0.2", "nan", "inf", "high", "", "0,5"]
LEVELS = ["high", "medium", "low", "HIGH", "0.4", "1", "7", "-1", "", "very"]
KINDS = ["existing_active", "existing_inactive", "new", "new", "old"]
NAMES = ["Kyoto trip", "Sourdough", "Stocks", "Misc", "kyoto  TRIP"]


class DrawPick:
    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw

    def choice(self, options: Sequence[T]) -> T:
        return self.draw(st.sampled_from(options))

    def number(self, low: int, high: int) -> int:
        return self.draw(st.integers(low, high))

    def text(self) -> str:
        return self.draw(st.one_of(st.sampled_from(TRICKY), st.text(max_size=60)))


class RandomPick:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def choice(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]

    def number(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def text(self) -> str:
        if self.rng.random() < 0.6:
            return self.choice(TRICKY)
        return "".join(chr(self.rng.randint(32, 0x2FFF)) for _ in range(self.rng.randint(0, 40)))


def _some_ids(pick: Pick, known: Sequence[str]) -> list[str]:
    """A few ids, mostly known ones."""
    pool = [*known, *known, *UNKNOWN_IDS] if known else UNKNOWN_IDS
    return [pick.choice(pool) for _ in range(pick.number(0, 4))]


def topic_result_xml(pick: Pick, ids: Sequence[str]) -> str:
    parts = []
    if pick.number(0, 5):
        parts.append(f"<relevance_score>{pick.choice(SCORES)}</relevance_score>")
    if pick.number(0, 3):
        listed = pick.choice([", ", " ", "\n- ", ";"]).join(_some_ids(pick, ids))
        parts.append(f"<referenced_messages>{listed}</referenced_messages>")
    if pick.number(0, 3):
        parts.append(f"<summary>{pick.text()}</summary>")
    return "<topic_result>" + "\n".join(parts) + "</topic_result>"


def topic_split_xml(pick: Pick, ids: Sequence[str], topic_ids: Sequence[str]) -> str:
    rows = []
    if pick.number(0, 2) == 0:  # tidy: every message once, to known or new topics
        for message_id in ids:
            if topic_ids and pick.number(0, 1):
                where = f'topic="existing_active" topic_id="{pick.choice(topic_ids)}"'
            else:
                where = f'topic="new" topic_name="{pick.choice(NAMES)}"'
            rows.append(f'<assignment msg_id="{message_id}" {where}>same subject</assignment>')
    else:
        for _ in range(pick.number(0, len(ids) + 1)):
            kind = pick.choice(KINDS)
            if kind == "new":
                name = escape(pick.choice([*NAMES, pick.text()]), quote=True)
                where = f'topic="new" topic_name="{name}"'
                inner = f"<summary>{pick.text()}</summary>" if pick.number(0, 1) else ""
            else:
                topic_id = pick.choice([*topic_ids, *UNKNOWN_IDS])
                where = f'topic="{kind}" topic_id="{topic_id}"'
                inner = ""
            listed = " ".join(_some_ids(pick, ids))
            rows.append(f'<assignment msg_id="{listed}" {where}>{inner}reason</assignment>')
    return "<topic_split>\n" + "\n".join(rows) + "\n</topic_split>"


def topic_brief_xml(pick: Pick) -> str:
    name = pick.choice([pick.text(), "Kyoto trip", "", "n" * 200])
    brief = pick.choice([pick.text(), "Ryokan in Gion &amp; trains to Nara", "", "b" * 3000])
    return f"<topic_brief><name>{name}</name><brief>{brief}</brief></topic_brief>"


def topic_routing_xml(pick: Pick, topic_ids: Sequence[str]) -> str:
    rows = [
        f'<topic id="{pick.choice([*topic_ids, *topic_ids, *UNKNOWN_IDS])}" '
        f'relevance="{pick.choice(LEVELS)}">{pick.text()}</topic>'
        for _ in range(pick.number(0, 3))
    ]
    return "<topic_routing><matched_topics>" + "".join(rows) + "</matched_topics></topic_routing>"


def mangled(pick: Pick, valid: str) -> str:
    """``valid`` as it is, cut off, doubled, wrapped in prose, broken, or replaced by garbage."""
    how = pick.number(0, 9)
    if how == 1:
        return valid[: pick.number(0, len(valid))]
    if how == 2:
        return valid + "\n" + valid
    if how == 3:
        return f"Sure! Here it is:\n{valid}\nAnything else?"
    if how == 4:
        return pick.text()
    if how == 5:
        return valid.replace("</", "<", 1)
    if how == 6:
        return ""
    return valid  # as it is: four times in ten


def responder_reply(pick: Pick) -> AIMessage:
    text = pick.choice([pick.text(), "", "Here is what I remember about the ryokan."])
    kind = pick.number(0, 4)
    calls: list[dict[str, Any]] = []
    if kind == 1:
        calls = [{"name": "activate_topic", "args": {"query": pick.text()}}]
    elif kind == 2:
        calls = [{"name": "activate_topic", "args": {}}]
    elif kind == 3:
        calls = [{"name": "web_search", "args": {"q": "ryokan"}}]
    tool_calls = [{**call, "id": f"call-{n}", "type": "tool_call"} for n, call in enumerate(calls)]
    return AIMessage(text, tool_calls=tool_calls)  # type: ignore[arg-type]


def chaos_reply(
    pick: Pick, role: str, ids: Sequence[str] = (), topic_ids: Sequence[str] = ()
) -> AIMessage:
    """A reply of the kind ``role`` asks for: sometimes valid, often not."""
    if role == "responder":
        return responder_reply(pick)
    if role == "splitter":
        valid = topic_split_xml(pick, ids, topic_ids)
    elif role == "topic_window":
        valid = topic_result_xml(pick, ids)
    elif role == "brief_writer":
        valid = topic_brief_xml(pick)
    else:
        valid = topic_routing_xml(pick, topic_ids)
    return AIMessage(mangled(pick, valid))


@st.composite
def model_replies(
    draw: st.DrawFn, role: str, ids: Sequence[str] = (), topic_ids: Sequence[str] = ()
) -> list[AIMessage]:
    """One to three replies for ``role`` (one call and its format retry use at most two)."""
    pick = DrawPick(draw)
    return [chaos_reply(pick, role, ids, topic_ids) for _ in range(draw(st.integers(1, 3)))]


def _static_prefix(name: str, language: str) -> str:
    """The start of a system prompt, up to its first variable."""
    prompt = load_prompt(name, language)
    return prompt.render(**{v: "\x00" for v in prompt.variables}).split("\x00")[0]


ROLE_PROMPTS = {
    role: [_static_prefix(name, language) for language in ("en", "zh")]
    for role, name in [
        ("splitter", "split"),
        ("topic_window", "topic_window"),
        ("brief_writer", "brief_writer"),
        ("index_router", "index_router"),
    ]
}


def role_of(messages: Sequence[BaseMessage]) -> str:
    """Which role a prompt comes from, by its system prompt (the responder's is the rest)."""
    system = next((m.text for m in messages if isinstance(m, SystemMessage)), "")
    for role, prefixes in ROLE_PROMPTS.items():
        if any(system.startswith(prefix) for prefix in prefixes):
            return role
    return "responder"


_VOLATILE = re.compile(
    r"\d{4}-\d\d-\d\d(?:[T ][\d:.]+(?:[+-]\d\d:?\d\d|Z)?)?|(?:msg|topic)-[0-9a-f]{8,}"
)
"""What differs between two runs of one example: times, generated message and topic ids."""


class ChaoticReplies:
    """Random replies for whichever role asks, seeded per example and per prompt.

    The reply depends on the seed and the prompt (without its times and generated ids) only,
    so that an example gets the same replies on every run, whatever order the topic windows
    of a turn run in.
    """

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def reseed(self, seed: int) -> None:
        with self._lock:
            self.seed = seed
            self.calls.clear()

    def __call__(self, messages: Sequence[BaseMessage], tools: bool) -> AIMessage:
        role = role_of(messages)
        body = "\n".join(m.text for m in messages if not isinstance(m, SystemMessage))
        with self._lock:
            self.calls[role] += 1
            seed = self.seed
        key = _VOLATILE.sub("", f"{seed}\x00" + "\x00".join(m.text for m in messages))
        rng = random.Random(hashlib.sha256(key.encode("utf-8", "replace")).hexdigest())
        ids = re.findall(r'<message id="([^"]*)"', body) or re.findall(r'<m n="([^"]*)"', body)
        topic_ids = re.findall(r'<topic id="([^"]*)"', body)
        return chaos_reply(RandomPick(rng), role, ids, topic_ids)


CHAOS = ChaoticReplies(0)


# --------------------------------------------------------------------- role inputs

TOPIC: TopicInfo = {
    "id": "topic-1",
    "name": "Kyoto trip",
    "brief": "Planning a trip to Kyoto in April",
    "status": "active",
    "file": "topics/topic-1.jsonl",
}
KNOWN: list[TopicInfo] = [
    TOPIC,
    {**TOPIC, "id": "topic-2", "name": "Stocks", "brief": "P/E ratios", "status": "dormant"},
]
KNOWN_IDS = [t["id"] for t in KNOWN]
SPLIT: list[StoredMessage] = [
    {"id": "m1", "role": "user", "content": "Let's plan a trip to Kyoto in April."},
    {"id": "m2", "role": "assistant", "content": "Book a ryokan near Gion early."},
    {
        "id": "m3",
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "name": "search", "args": {"q": "ryokan"}}],
    },
    {"id": "m4", "role": "tool", "content": "Gion Hatanaka, 30,000 yen", "tool_call_id": "c1"},
]
UNSPLIT: list[StoredMessage] = [
    {"id": "m9", "role": "user", "content": "Which hotel did we pick in Kyoto?"},
]
UNITS: list[list[StoredMessage]] = [
    [
        {"id": "s1", "role": "user", "content": "What P/E ratio is reasonable?"},
        {"id": "s2", "role": "assistant", "content": "Under 15 for value stocks."},
    ],
    [
        {"id": "s3", "role": "user", "content": "My sourdough starter smells of acetone."},
        {"id": "s4", "role": "assistant", "content": "Feed it twice a day."},
    ],
    SPLIT,
]
UNIT_IDS = [m["id"] for unit in UNITS for m in unit]


def _model(replies: Sequence[AIMessage]) -> tuple[ScriptedChatModel, Replies]:
    source = Replies(replies)
    return ScriptedChatModel(source=source), source


# ------------------------------------------------------------------ model-reply properties


@REPLY_RUNS
@given(text=st.one_of(st.text(max_size=200), st.sampled_from(TRICKY)))
def test_reply_parsers_reject_any_text_only_with_a_format_error(text: str) -> None:
    parsers: list[Callable[[str], object]] = [
        lambda reply: parse_plan(reply, UNIT_IDS, set(KNOWN_IDS)),
        lambda reply: parse_verdict(reply, {"m1", "m2"}),
        lambda reply: parse_brief(reply, BRIEF_BYTES),
        lambda reply: parse_routing(reply, set(KNOWN_IDS)),
    ]
    wrapped = [text, f"<topic_result>{text}", f"<topic_split>{text}</topic_split>"]
    for parse in parsers:
        for reply in wrapped:
            try:
                parse(reply)
            except ReplyFormatError as error:
                assert str(error)  # the message is what the model is told on the retry


@REPLY_RUNS
@given(replies=model_replies("splitter", UNIT_IDS, KNOWN_IDS))
def test_the_splitter_assigns_every_unit_whatever_the_model_replies(
    replies: list[AIMessage],
) -> None:
    model, source = _model(replies)
    plan = LlmSplitter(model, NATIVE.splitter, POLICY, brief_bytes=BRIEF_BYTES).split(UNITS, KNOWN)
    assert 1 <= source.asked <= 2  # one format retry, no more
    destinations, problems = resolve_plan(plan, UNITS, set(KNOWN_IDS))
    assert len(destinations) == len(UNITS)
    assert not problems, problems  # no unit left to mending: each is placed by the plan
    assigned = [i for a in plan["assignments"] for i in a["message_ids"]]
    assert len(assigned) == len(set(assigned)) and set(assigned) <= set(UNIT_IDS)
    assert all(t["name"].strip() for t in plan["new_topics"])


@REPLY_RUNS
@given(replies=model_replies("topic_window", [m["id"] for m in SPLIT]))
def test_the_topic_window_scores_and_quotes_only_known_messages(
    replies: list[AIMessage],
) -> None:
    model, source = _model(replies)
    verdict = LlmTopicWindow(model, NATIVE.topic_window, POLICY).evaluate(TOPIC, SPLIT, UNSPLIT)
    assert 1 <= source.asked <= 2
    assert 0.0 <= verdict["relevance_score"] <= 1.0
    quoted = verdict["referenced_message_ids"]
    assert len(quoted) == len(set(quoted)) and set(quoted) <= {m["id"] for m in SPLIT}
    assert isinstance(verdict["summary"], str)


@REPLY_RUNS
@given(replies=model_replies("brief_writer"))
def test_the_brief_writer_always_names_and_describes_the_topic(replies: list[AIMessage]) -> None:
    model, source = _model(replies)
    writer = LlmBriefWriter(model, NATIVE.brief_writer, POLICY, brief_bytes=BRIEF_BYTES)
    name, brief = writer.write(TOPIC, SPLIT)
    assert 1 <= source.asked <= 2
    assert name.strip() and len(name) <= MAX_NAME_CHARS
    assert brief.strip() and len(brief.encode()) <= 2 * BRIEF_BYTES + len("…".encode())


CANDIDATES = [(KNOWN[0], 0.61), (KNOWN[1], 0.2)]


@REPLY_RUNS
@given(replies=model_replies("index_router", topic_ids=KNOWN_IDS), deep=st.booleans())
def test_the_index_router_returns_only_candidates_best_first(
    replies: list[AIMessage], deep: bool
) -> None:
    model, source = _model(replies)
    router = LlmIndexRouter(model, NATIVE.index_router, POLICY)
    routed = router.route("which ryokan did we pick in Kyoto?", CANDIDATES, deep=deep)
    assert 1 <= source.asked <= 2
    ids = [r["topic_id"] for r in routed]
    assert len(ids) == len(set(ids)) and set(ids) <= set(KNOWN_IDS)
    relevance = [r["relevance"] for r in routed]
    assert all(0.0 <= r <= 1.0 for r in relevance) and relevance == sorted(relevance, reverse=True)


@REPLY_RUNS
@given(replies=model_replies("responder"), can_activate=st.booleans())
def test_the_responder_answers_or_asks_for_activation_only_when_it_may(
    replies: list[AIMessage], can_activate: bool
) -> None:
    model, source = _model(replies)
    responder = LlmResponder(model, NATIVE.responder, POLICY)
    reply = responder.respond(context_of([*SPLIT, *UNSPLIT]), can_activate=can_activate)
    assert 1 <= source.asked <= 2
    if reply["activate_query"] is None:
        assert reply["text"].strip()
    else:
        assert can_activate and reply["activate_query"].strip()


# ------------------------------------------------------------------------- conversations

USER_LINES = [
    "Let's plan the trip to Kyoto in April.",
    "Which ryokan near Gion did we pick?",
    "Search the train times from Kyoto to Nara.",
    "My sourdough starter smells of acetone, is it dead?",
    "How much flour for the country loaf?",
    "What P/E ratio is reasonable for a value stock?",
    "Is the dividend of that stock safe?",
    "最近想开始健身，每周三次力量训练应该怎么安排？",
]
ASSISTANT_LINES = [
    "Stay near Gion: the temples are walkable.",
    "The ryokan Gion Hatanaka serves a kaiseki dinner.",
    "Feed the starter flour and water twice a day.",
    "Use 500 g flour, 350 g water and 100 g starter.",
    "Under 15 is a reasonable P/E for a value stock.",
    "The dividend is covered twice by free cash flow.",
    "新手可以先练高脚杯深蹲。",
]
CALL_LINES = ["", "Let me look that up.", "Checking the timetable and the prices."]
TOOL_RESULTS = [
    "search: Gion Hatanaka ryokan, 30,000 yen a night, near Yasaka shrine",
    "search: trains from Kyoto to Nara every 15 minutes, 45 minutes on the Kintetsu line",
    "calculator: 500 * 0.7 = 350",
    "search: dividend payout ratio 42 percent",
    '{"status": "ok", "rows": []}',
]
TOOLS = ["search", "calculator", "calendar"]
FATES = ["answer", "answer", "answer", "never"]
"""What becomes of a call: answered later in its turn, or never."""


@st.composite
def conversations(draw: st.DrawFn, late: bool = False) -> list[BaseMessage]:
    """A history of user and assistant messages and tool exchanges, with unique stable ids.

    Tool results come after their call, in any order, interleaved with later assistant messages
    of the turn; some calls are never answered. With ``late``, some results arrive only after a
    later user message than their call.
    """
    messages: list[BaseMessage] = []
    numbers = itertools.count()
    overdue: list[tuple[str, str]] = []  # (call id, tool) answered after a later user message
    fates = [*FATES, "late"] if late else FATES

    def text(lines: list[str]) -> str:
        return " ".join(draw(st.lists(st.sampled_from(lines), min_size=1, max_size=2)))

    def answer(call: tuple[str, str]) -> None:
        call_id, tool = call
        result = ToolMessage(
            text(TOOL_RESULTS), id=f"t{len(messages)}", tool_call_id=call_id, name=tool
        )
        messages.append(result)

    def user() -> None:
        messages.append(HumanMessage(text(USER_LINES), id=f"h{len(messages)}"))

    for turn in range(draw(st.integers(2, 6))):
        if turn or draw(st.booleans()):
            user()
        for call in draw(st.permutations(overdue)):
            answer(call)
        overdue.clear()
        waiting: list[tuple[str, str]] = []
        for _ in range(draw(st.integers(1, 3))):
            if draw(st.booleans()):
                made = [
                    (f"c{next(numbers)}", tool)
                    for tool in draw(st.lists(st.sampled_from(TOOLS), min_size=1, max_size=2))
                ]
                calls = [
                    {"id": call_id, "name": tool, "args": {"q": text(USER_LINES)}}
                    for call_id, tool in made
                ]
                messages.append(
                    AIMessage(
                        draw(st.sampled_from(CALL_LINES)),
                        id=f"a{len(messages)}",
                        tool_calls=calls,  # type: ignore[arg-type]
                    )
                )
                for call in made:
                    fate = draw(st.sampled_from(fates))
                    if fate == "answer":
                        waiting.append(call)
                    elif fate == "late":
                        overdue.append(call)
            else:
                messages.append(AIMessage(text(ASSISTANT_LINES), id=f"a{len(messages)}"))
            if waiting:  # some results arrive now, in any order
                for call in draw(st.lists(st.sampled_from(waiting), unique=True)):
                    answer(call)
                    waiting.remove(call)
        for call in draw(st.permutations(waiting)):
            answer(call)
    if overdue:
        user()
        for call in draw(st.permutations(overdue)):
            answer(call)
    return messages


def _late_results(messages: Sequence[BaseMessage]) -> list[str]:
    """Ids of tool results that come after a later user message than their call."""
    called_at: dict[str, int] = {}
    users = 0
    late: list[str] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            users += 1
        elif isinstance(message, AIMessage):
            called_at.update({str(call["id"]): users for call in message.tool_calls})
        elif isinstance(message, ToolMessage):
            if called_at.get(message.tool_call_id, users) < users:
                late.append(str(message.id))
    return late


def _unpaired_in_topics(memory: TopicMemory, thread: str) -> list[str]:
    """Tool results stored in a topic that does not hold their call."""
    store = memory.services.stores(thread).topic_store
    problems: list[str] = []
    for topic_id in store.topic_ids():
        stored = store.messages(topic_id)
        calls = {str(call.get("id")) for m in stored for call in m.get("tool_calls") or []}
        problems += [
            f"{m['id']} in {topic_id} without its call {m.get('tool_call_id')}"
            for m in stored
            if m["role"] == "tool" and m.get("tool_call_id") not in calls
        ]
    return problems


def _unpaired_in_window(context: AssembledContext) -> list[str]:
    """Tool results of the window's chat part whose call is nowhere in the window."""
    window = [*context["messages"], *context["referenced_messages"]]
    calls = {str(call.get("id")) for m in window for call in m.get("tool_calls") or []}
    return [
        f"{m['id']} without its call {m.get('tool_call_id')}"
        for m in context["messages"]
        if m["role"] == "tool" and m.get("tool_call_id") not in calls
    ]


def _check_imported(memory: TopicMemory, thread: str, messages: list[BaseMessage]) -> None:
    """After an import of ``messages``: a chat turn and a context query keep everything whole."""
    memory.chat(thread, "What did the search return about the ryokan?")
    ids = [str(m.id) for m in messages]
    transcript = [m["id"] for m in memory.transcript(thread)]
    assert len(transcript) == len(set(transcript)) == len(ids) + 2, Counter(transcript)
    assert set(ids) <= set(transcript)
    report = memory.check(thread)
    assert report.ok, report.findings
    assert not _unpaired_in_topics(memory, thread)
    context = memory.context(thread, "And the train times to Nara?")["context"]
    assert not _unpaired_in_window(context)


def _check_conversation(memory: TopicMemory, messages: list[BaseMessage]) -> None:
    thread = f"p{next(_threads)}"
    assert memory.import_messages(thread, messages) == len(messages)
    _check_imported(memory, thread, messages)


def _memory(root: Path, roles: Roles) -> TopicMemory:
    settings_ = Settings(data_dir=root, budget_tokens=350, keep_recent=4, min_split_messages=2)
    return TopicMemory(settings=settings_, roles=roles, embedder=EMBEDDER)


@pytest.fixture(scope="module")
def native_memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TopicMemory]:
    settings_ = Settings(budget_tokens=350, keep_recent=4)
    with _memory(tmp_path_factory.mktemp("native"), native_roles(EMBEDDER, settings_)) as memory:
        yield memory


@pytest.fixture(scope="module")
def chaotic_memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TopicMemory]:
    """Every role an LLM role, on one model that answers anything (CHAOS, seeded per example)."""
    model = ScriptedChatModel(source=CHAOS)
    roles = Roles(
        splitter=LlmSplitter(model, NATIVE.splitter, POLICY, brief_bytes=BRIEF_BYTES),
        topic_window=LlmTopicWindow(model, NATIVE.topic_window, POLICY),
        brief_writer=LlmBriefWriter(model, NATIVE.brief_writer, POLICY, brief_bytes=BRIEF_BYTES),
        index_router=LlmIndexRouter(model, NATIVE.index_router, POLICY),
        responder=LlmResponder(model, NATIVE.responder, POLICY),
    )
    with _memory(tmp_path_factory.mktemp("chaotic"), roles) as memory:
        yield memory


@FEW_RUNS
@given(messages=conversations())
def test_tool_exchanges_in_any_order_are_kept_whole_and_together(
    native_memory: TopicMemory, messages: list[BaseMessage]
) -> None:
    _check_conversation(native_memory, messages)


@FEW_RUNS
@given(messages=conversations(), seed=st.integers(0, 2**32 - 1))
def test_any_model_replies_lose_no_message(
    chaotic_memory: TopicMemory, messages: list[BaseMessage], seed: int
) -> None:
    CHAOS.reseed(seed)
    _check_conversation(chaotic_memory, messages)
    assert CHAOS.calls["responder"] >= 1  # the model did answer (or was asked to)


@FEW_RUNS
@given(messages=conversations(late=True))
def test_tool_results_long_after_their_call_are_refused_or_kept_with_it(
    native_memory: TopicMemory, messages: list[BaseMessage]
) -> None:
    """A result that comes after a later user message than its call is refused, naming it.

    Providers require a call's results before the next user message; accepted, such a result
    would sit in another topic than its call (invariant 8). Refused, nothing is written
    (invariant 7). Histories without such a result import whole.
    """
    thread = f"p{next(_threads)}"
    try:
        native_memory.import_messages(thread, messages)
    except InputError as error:
        assert "comes after a later user message" in str(error)
        assert _late_results(messages)
        assert not native_memory.exists(thread)
        return
    assert not _late_results(messages)
    _check_imported(native_memory, thread, messages)
