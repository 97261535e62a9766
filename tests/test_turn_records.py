"""The working set's records are converted once per turn, and again after a change."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langgraph_topics.state import turn_records as memo
from langgraph_topics.state.messages import to_stored
from langgraph_topics.state.turn_records import new_turn, turn_records


def test_a_turn_converts_each_message_object_once(monkeypatch: pytest.MonkeyPatch) -> None:
    messages = [HumanMessage("hi", id="a"), AIMessage("hello", id="b")]
    converted: list[str] = []

    def counting(message: HumanMessage | AIMessage) -> object:
        converted.append(str(message.id))
        return to_stored(message)

    monkeypatch.setattr(memo, "to_stored", counting)
    new_turn()
    first = turn_records(messages)
    again = turn_records(iter(messages))  # the estimate hands a generator
    assert first == again == [to_stored(m) for m in messages]
    assert converted == ["a", "b"]
    # An equal message that is another object (the next turn's checkpoint read) is converted.
    assert turn_records([HumanMessage("hi", id="a")]) == first[:1]
    assert converted == ["a", "b", "a"]


def test_a_message_changed_in_place_reads_anew_in_the_next_turn() -> None:
    message = HumanMessage("before", id="a")
    new_turn()
    assert turn_records([message])[0]["content"] == "before"
    message.content = "after"  # an application's own input object, edited between turns
    new_turn()
    assert turn_records([message])[0]["content"] == "after"


def test_the_memo_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memo, "LIMIT", 4)
    new_turn()
    kept = [HumanMessage(str(n), id=str(n)) for n in range(10)]
    for message in kept:
        turn_records([message])
        assert len(memo._records) <= 4
    assert [r["content"] for r in turn_records(kept)] == [str(n) for n in range(10)]


def test_a_message_without_an_id_is_refused_as_before() -> None:
    new_turn()
    with pytest.raises(ValueError, match="needs an id"):
        turn_records([HumanMessage("no id")])
