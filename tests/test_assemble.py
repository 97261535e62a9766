"""The main window: order, no duplicates, and the budget."""

from __future__ import annotations

from langgraph_topics.nodes.assemble import TRUNCATION_MARK, assemble_window
from langgraph_topics.state.records import StoredMessage, TopicResult
from langgraph_topics.tokens import default_token_counter, message_tokens

COUNTER = default_token_counter()


def _message(i: int, text: str = "", role: str = "user") -> StoredMessage:
    return {"id": f"m{i}", "role": role, "content": text or f"message number {i} about things"}  # type: ignore[typeddict-item]


def _result(topic: str, score: float, refs: list[str], summary: str = "") -> TopicResult:
    return {
        "topic_id": topic,
        "name": topic,
        "brief": f"brief of {topic}",
        "file": f"{topic}.jsonl",
        "relevance_score": score,
        "referenced_message_ids": refs,
        "summary": summary or f"summary of {topic}",
        "round": 0,
    }


def _window(
    working: list[StoredMessage],
    results: list[TopicResult],
    lookup: list[StoredMessage],
    budget: int,
    located: dict[str, str] | None = None,
    family_heads: dict[str, TopicResult] | None = None,
):  # type: ignore[no-untyped-def]
    return assemble_window(
        working,
        located or {},
        results,
        {m["id"]: m for m in lookup},
        budget=budget,
        keep_recent=20,
        reference_threshold=0.3,
        language="en",
        counter=COUNTER,
        family_heads=family_heads,
    )


def test_results_sorted_by_score_and_no_message_twice() -> None:
    stored = [_message(i) for i in range(100, 106)]
    working = [_message(i) for i in range(25)]
    results = [
        _result("low", 0.4, ["m100", "m101"]),
        _result("high", 0.9, ["m101", "m102", "m3"]),  # m3 is also in the chat part
        _result("mid", 0.6, ["m103"]),
        _result("faint", 0.2, ["m104"]),  # under 0.3: not shown
    ]
    window = _window(working, results, stored, budget=100_000)
    assert window["topic_ids"] == ["high", "mid", "low"]
    assert len(window["message_ids"]) == len(set(window["message_ids"]))
    assert [m["id"] for m in window["referenced_messages"]] == ["m101", "m102", "m103", "m100"]
    assert window["recent_ids"] == [f"m{i}" for i in range(5, 25)]
    assert window["message_ids"][-20:] == window["recent_ids"]
    assert window["system_prompt"].index("## high (high)") < window["system_prompt"].index(
        "## mid (mid)"
    )
    assert window["tokens"] == COUNTER(window["system_prompt"]) + sum(
        message_tokens(m, COUNTER) for m in window["messages"]
    )


def test_pieces_give_way_by_value_across_topics() -> None:
    long = "detail " * 120
    stored = [_message(100 + i, long) for i in range(6)]
    working = [_message(i) for i in range(20)]
    results = [
        {**_result("a", 0.9, ["m100", "m101"]), "reference_relevance": [0.9, 0.2]},
        {**_result("b", 0.7, ["m102", "m103"]), "reference_relevance": [0.8, 0.3]},
        {**_result("c", 0.5, ["m104", "m105"]), "reference_relevance": [0.7, 0.1]},
    ]
    full = _window(working, results, stored, budget=100_000)
    assert {m["id"] for m in full["referenced_messages"]} == {f"m{100 + i}" for i in range(6)}
    budget = full["tokens"] - 370  # room for three of the six quotes
    window = _window(working, results, stored, budget=budget)
    assert window["tokens"] <= budget
    quoted = {m["id"] for m in window["referenced_messages"]}
    # The strong quote of the weakest topic outlives the weak quotes of the stronger ones.
    assert {"m100", "m102", "m104"} <= quoted
    trimmed = [(t["kind"], t["id"]) for t in window["trimmed"]]
    assert ("referenced_message", "m105") in trimmed
    assert window["topic_ids"] == ["a", "b", "c"]  # blocks still by topic score
    assert window["recent_ids"] == [m["id"] for m in working]
    assert set(window["recent_ids"]) <= set(window["message_ids"])


def test_quotes_render_in_conversation_order_under_their_dates() -> None:
    stored = [
        {**_message(100, "we booked the ryokan"), "timestamp": "2024-03-02T10:00:00"},
        {**_message(101, "the train leaves at nine"), "timestamp": "2024-03-01T09:00:00"},
        {**_message(102, "pack the rail pass"), "timestamp": "2024-03-02T11:00:00"},
    ]
    result = {
        **_result("trip", 0.8, ["m100", "m102", "m101"]),
        "reference_relevance": [0.9, 0.8, 0.7],
    }
    window = _window([_message(i) for i in range(20)], [result], stored, budget=100_000)
    prompt = window["system_prompt"]
    assert [m["id"] for m in window["referenced_messages"]] == ["m101", "m100", "m102"]
    assert prompt.index("[2024-03-01]") < prompt.index("the train leaves")
    assert prompt.index("the train leaves") < prompt.index("[2024-03-02]")
    assert prompt.count("[2024-03-02]") == 1


def test_older_unsplit_messages_go_before_recent_ones() -> None:
    working = [_message(i, "word " * 40) for i in range(40)]
    window = _window(working, [], [], budget=1500)
    assert window["tokens"] <= 1500
    assert window["recent_ids"] == [f"m{i}" for i in range(20, 40)]
    dropped = {t["id"] for t in window["trimmed"]}
    assert dropped == {f"m{i}" for i in range(len(dropped))}  # the oldest gave way
    assert all(t["kind"] == "unsplit_message" for t in window["trimmed"])


def test_when_the_last_20_alone_exceed_the_budget_they_are_shortened_not_dropped() -> None:
    working = [_message(i, "long text " * 200) for i in range(20)]
    window = _window(working, [_result("a", 0.9, [], "a summary")], [], budget=2500)
    assert window["tokens"] <= 2500
    assert window["message_ids"] == [f"m{i}" for i in range(20)]
    shortened = [m for m in window["messages"] if m["content"].endswith(TRUNCATION_MARK)]
    assert shortened and shortened[0]["id"] == "m0"  # oldest first
    assert window["messages"][-1]["content"] == working[-1]["content"]  # the newest is whole
    # The recalled evidence keeps a floor of the room (EVIDENCE_FLOOR): the topic's result is
    # shown, the oldest recent messages shortened the more for it.
    assert "a" in window["topic_ids"]
    assert ("topic_result", "a") not in [(t["kind"], t["id"]) for t in window["trimmed"]]


def test_split_messages_in_the_working_set_are_not_shown_as_unsplit() -> None:
    working = [_message(i) for i in range(30)]
    window = _window(working, [], [], budget=100_000, located={"m0": "t1", "m1": "t1"})
    assert "m0" not in window["message_ids"] and "m2" in window["message_ids"]


def _tool_exchange(base: int, call_id: str) -> list[StoredMessage]:
    call: StoredMessage = {
        "id": f"m{base}",
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": call_id, "name": "search", "args": {"q": "ryokan"}}],
    }
    result: StoredMessage = {
        "id": f"m{base + 1}",
        "role": "tool",
        "content": "Gion ryokan, 5 minutes from the station " * 5,
        "tool_call_id": call_id,
    }
    return [call, result]


def test_a_quoted_tool_result_brings_its_call_or_stays_out() -> None:
    exchange = _tool_exchange(100, "c1")
    result = {**_result("trip", 0.9, ["m101"]), "reference_relevance": [0.9]}
    working = [_message(i) for i in range(20)]
    lookup = {m["id"]: m for m in exchange}
    with_exchange = assemble_window(
        working, {}, [result], lookup, budget=100_000, keep_recent=20,
        reference_threshold=0.3, language="en", counter=COUNTER,
        exchanges={"m100": exchange, "m101": exchange},
    )  # fmt: skip
    assert [m["id"] for m in with_exchange["referenced_messages"]] == ["m100", "m101"]
    without = _window(working, [result], exchange, budget=100_000)
    assert without["referenced_messages"] == []


def test_unsplit_tool_exchanges_enter_or_give_way_whole() -> None:
    older = [_message(0, "a question about the hotel " * 3), *_tool_exchange(1, "c2")]
    older += [_message(i, "filler words " * 30) for i in range(3, 12)]
    working = older + [_message(i) for i in range(20, 40)]
    for budget in range(300, 1400, 37):
        window = _window(working, [], [], budget=budget)
        ids = set(window["message_ids"])
        assert ("m1" in ids) == ("m2" in ids), budget
        assert window["tokens"] <= budget


def test_recent_messages_that_open_with_a_tool_result_keep_its_call() -> None:
    working = [_message(i) for i in range(10)] + _tool_exchange(10, "c3")
    working += [_message(i) for i in range(12, 31)]  # the last 20 start with the tool result
    window = _window(working, [], [], budget=100_000)
    assert window["recent_ids"][:2] == ["m10", "m11"]
    tight = _window(working, [], [], budget=900)
    assert {"m10", "m11"} <= set(tight["message_ids"]) and tight["tokens"] <= 900


def test_the_recent_part_reaches_back_to_every_call_of_its_results() -> None:
    from langgraph_topics.state.working_set import recent_messages

    def call(message_id: str, call_id: str) -> StoredMessage:
        return {
            "id": message_id,
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": call_id, "name": "search", "args": {}}],
        }

    def result(message_id: str, call_id: str) -> StoredMessage:
        return {"id": message_id, "role": "tool", "content": "found", "tool_call_id": call_id}

    # Two calls before their results: the cut after the second call must move past both.
    working = [_message(0), call("a1", "c8"), call("a2", "c9"), result("t3", "c8")]
    working += [result("t4", "c9"), _message(5)]
    assert [m["id"] for m in recent_messages(working, 4)] == ["a1", "a2", "t3", "t4", "m5"]
    assert [m["id"] for m in recent_messages(working, 1)] == ["m5"]
    orphan = [_message(0), result("t1", "gone"), _message(2)]  # its call is not here at all
    assert [m["id"] for m in recent_messages(orphan, 2)] == ["t1", "m2"]


def test_an_unanswered_tool_call_does_not_glue_the_rest_of_the_conversation() -> None:
    from langgraph_topics.state.units import group_units, split_point

    call: StoredMessage = {
        "id": "c",
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "never-answered", "name": "search", "args": {}}],
    }
    messages = [_message(0), call] + [_message(i, role="user") for i in range(1, 30)]
    units = group_units(messages)
    assert [m["id"] for m in units[0]] == ["m0", "c"]
    assert len(units) == 30
    assert split_point(messages, 20) == 11


def test_subtopics_of_one_family_share_one_block_under_their_root() -> None:
    from langgraph_topics.checks import CheckReport, check_context

    stored: list[StoredMessage] = [
        {**_message(100 + i), "timestamp": f"2024-05-0{i + 1}T10:00:00"} for i in range(4)
    ]
    working = [_message(i) for i in range(25)]
    root: TopicResult = {
        **_result("trip", 0.0, []),
        "name": "Kyoto trip",
        "brief": "the whole trip",
        "summary": "",
    }
    results = [
        _result("trip-a", 0.9, ["m101"], summary="ryokan booked"),
        _result("other", 0.7, ["m103"]),
        _result("trip-b", 0.5, ["m100", "m102"], summary="shrine at dawn"),
    ]
    families = {"trip-a": root, "trip-b": root}
    window = _window(working, results, stored, budget=100_000, family_heads=families)
    prompt = window["system_prompt"]
    # One header for the family, the root's; its subtopics' quotes in conversation order.
    assert prompt.count("## Kyoto trip (trip)") == 1
    assert "## trip-a" not in prompt and "## trip-b" not in prompt
    assert "brief of trip-a" not in prompt and "the whole trip" in prompt
    assert "ryokan booked" in prompt and "shrine at dawn" not in prompt  # one summary a block
    assert prompt.index("## Kyoto trip") < prompt.index("## other (other)")
    assert [m["id"] for m in window["referenced_messages"]] == ["m100", "m101", "m102", "m103"]
    assert window["topic_ids"] == ["trip-a", "trip-b", "other"]
    by_id = {r["topic_id"]: r for r in results}
    report = CheckReport()
    check_context(report, window, window["recent_ids"], by_id, {"trip-a": "trip", "trip-b": "trip"})
    assert report.ok, report.findings
    # Without the family map the same order reads as out of score order (invariant 3).
    unordered = CheckReport()
    check_context(unordered, window, window["recent_ids"], by_id)
    assert not unordered.ok


def test_a_family_block_pays_one_header() -> None:
    stored = [_message(100 + i, "fact " * 30) for i in range(2)]
    working = [_message(i) for i in range(20)]
    results = [
        {**_result("a1", 0.9, ["m100"], summary="s"), "name": "a long subtopic name " * 8},
        {**_result("a2", 0.8, ["m101"], summary="s"), "name": "another long name " * 8},
    ]
    root: TopicResult = {**_result("a", 0.0, []), "name": "A", "brief": "", "summary": ""}

    def quoted(heads: dict[str, TopicResult] | None, budget: int) -> int:
        window = _window(working, results, stored, budget=budget, family_heads=heads)
        return len(window["referenced_messages"])

    # The smallest budget that shows both quotes as one family shows fewer as two topics.
    budget = next(b for b in range(100, 5000, 5) if quoted({"a1": root, "a2": root}, b) == 2)
    assert quoted(None, budget) < 2
