"""Model-safe message order (issue 34 item 4).

A quoted reply always comes with its question, or a line naming it; with alternation the chat
part opens with a user message and alternates, as strict chat templates require.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langgraph_topics.integrations.messages import context_messages
from langgraph_topics.nodes.assemble import assemble_window
from langgraph_topics.prompts.main_window import reply_note
from langgraph_topics.state.records import AssembledContext, StoredMessage, TopicResult
from langgraph_topics.state.turn_order import joined_turns, leading_replies, unit_start
from langgraph_topics.tokens import default_token_counter

COUNTER = default_token_counter()


_SENT = itertools.count()


def _message(key: str, role: str, text: str = "") -> StoredMessage:
    """A message sent a second after the one made before it."""
    second = next(_SENT)
    stamp = f"2024-05-01T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
    message = {"id": key, "role": role, "content": text or f"{role} says {key}", "timestamp": stamp}
    return message  # type: ignore[return-value]


def _exchange(n: int) -> list[StoredMessage]:
    return [_message(f"u{n}", "user"), _message(f"a{n}", "assistant")]


def _result(refs: list[str], relevance: list[float]) -> TopicResult:
    return {
        "topic_id": "t",
        "name": "garden",
        "brief": "",
        "file": "t.jsonl",
        "relevance_score": 0.9,
        "referenced_message_ids": refs,
        "reference_relevance": relevance,
        "summary": "",
        "round": 0,
    }


def _window(
    working: list[StoredMessage],
    results: list[TopicResult],
    stored: list[StoredMessage],
    *,
    alternate: bool = False,
    keep_recent: int = 6,
    budget: int = 100_000,
) -> AssembledContext:
    by_id = {m["id"]: m for m in stored}

    def question_of(message_id: str) -> StoredMessage | None:
        place = next(i for i, m in enumerate(stored) if m["id"] == message_id)
        before = [m for m in stored[:place] if m["role"] == "user"]
        return before[-1] if before else None

    return assemble_window(
        working,
        {},
        results,
        by_id,
        budget=budget,
        keep_recent=keep_recent,
        reference_threshold=0.3,
        language="en",
        counter=COUNTER,
        question_of=question_of,
        alternate=alternate,
    )


def test_a_quoted_reply_without_its_question_names_it() -> None:
    stored = [
        _message("q1", "user", "How often should I water the tomatoes?"),
        _message("r1", "assistant", "Every other day in summer."),
        _message("q2", "user", "And the basil?"),
        _message("r2", "assistant", "Daily, in the morning."),
    ]
    # The evidence quotes q1 and r2, but not r2's question: r2 would read as q1's answer.
    window = _window(_exchange(1), [_result(["q1", "r2"], [0.9, 0.8])], stored)
    prompt = window["system_prompt"]
    note = reply_note(stored[2], "en")
    assert note == '(in reply to user: "And the basil?")'
    assert prompt.index("user: How often") < prompt.index(note) < prompt.index("assistant: Daily")


def test_a_reply_quoted_under_its_question_needs_no_note() -> None:
    stored = [
        _message("q1", "user", "How often should I water the tomatoes?"),
        _message("r1", "assistant", "Every other day in summer."),
    ]
    window = _window(_exchange(1), [_result(["r1", "q1"], [0.9, 0.5])], stored)
    assert "in reply to" not in window["system_prompt"]
    assert (
        "user: How often should I water the tomatoes?\nassistant: Every other"
        in (window["system_prompt"])
    )


def test_the_note_is_paid_for_within_the_budget() -> None:
    stored = [_message(f"q{i}", "user", f"question {i} " * 5) for i in range(1)]
    stored += [_message(f"r{i}", "assistant", f"answer {i} " * 8) for i in range(6)]
    refs = [f"r{i}" for i in range(6)]
    working = _exchange(1)
    for budget in (260, 300, 340, 400):
        window = _window(working, [_result(refs, [0.9] * 6)], stored, budget=budget)
        assert window["tokens"] <= budget
        assert (
            COUNTER(window["system_prompt"])
            + sum(COUNTER(m["content"]) for m in window["messages"])
            <= budget
        )


def _roles_alternate(messages: Sequence[BaseMessage]) -> bool:
    """A user message first; then a reply turn (assistant messages, each tool call followed by
    its results) and a user message in turn; no two text-only replies in a row."""
    if not messages or not isinstance(messages[0], HumanMessage):
        return False
    previous: BaseMessage | None = None
    open_calls: set[str] = set()
    for message in messages:
        if isinstance(message, HumanMessage):
            if isinstance(previous, HumanMessage) or open_calls:
                return False
        elif isinstance(message, ToolMessage):
            if message.tool_call_id not in open_calls:
                return False
            open_calls.discard(message.tool_call_id)
        elif isinstance(message, AIMessage):
            if open_calls or (isinstance(previous, AIMessage) and not previous.tool_calls):
                return False
            open_calls = {call["id"] or "" for call in message.tool_calls}
        previous = message
    return True


def test_alternation_opens_with_a_user_message_and_keeps_exchanges_whole() -> None:
    working = [_message("hello", "assistant", "Hi! How can I help?")]
    for n in range(12):
        working += _exchange(n)
    working.insert(9, _message("u-again", "user", "(sent twice)"))  # two user messages in a row
    for keep in (3, 4, 5, 6, 7):
        for budget in (150, 260, 100_000):
            window = _window(working, [], [], alternate=True, keep_recent=keep, budget=budget)
            sent = context_messages(window)
            assert isinstance(sent[0], SystemMessage)
            assert _roles_alternate(sent[1:]), [type(m).__name__ for m in sent]
            assert window["recent_ids"][-keep:] == [m["id"] for m in working[-keep:]]
            assert set(window["recent_ids"]) <= set(window["message_ids"])
            assert window["tokens"] <= budget
    # Off, the window starts where the last keep_recent do.
    window = _window(working, [], [], keep_recent=5)
    assert window["messages"][0]["role"] == "assistant"


def test_a_reply_before_any_question_is_quoted_in_the_system_prompt() -> None:
    working = [_message("hello", "assistant", "Hi! How can I help?"), *_exchange(1)]
    window = _window(working, [], [], alternate=True)
    assert [m["id"] for m in window["messages"]] == ["u1", "a1"]
    prompt = window["system_prompt"]
    assert prompt.index("Earlier in this conversation:") < prompt.index("assistant: Hi! How can")
    assert window["recent_ids"] == ["hello", "u1", "a1"]
    assert window["message_ids"] == ["hello", "u1", "a1"]


def test_turn_order_helpers() -> None:
    messages = [_message("a0", "assistant"), *_exchange(1), _message("t", "tool")]
    assert unit_start(messages, 3) == 1 and unit_start(messages, 0) == 0
    assert leading_replies(messages) == 1 and leading_replies(messages[:1]) == 1
    joined = joined_turns(
        [
            HumanMessage("one"),
            HumanMessage("two"),
            AIMessage("three"),
            AIMessage("four", tool_calls=[{"name": "f", "args": {}, "id": "c"}]),
            ToolMessage("five", tool_call_id="c"),
            AIMessage("six"),
        ]
    )
    assert [m.content for m in joined] == ["one\n\ntwo", "three\n\nfour", "five", "six"]
    assert isinstance(joined[1], AIMessage) and joined[1].tool_calls[0]["id"] == "c"
