"""The topic-window governor and the active cap (issue 33 items 3 and 4, seed 000 §4.7)."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, ClassVar, cast

import pytest
from conftest import MemoryFactory
from conversations import subject_records
from fakes import RecordingTopicWindow, with_roles
from langchain_core.messages import AIMessage, ToolMessage

from langgraph_topics import TopicMemory
from langgraph_topics.activation import governor
from langgraph_topics.activation.fan_out_plan import over_max_active
from langgraph_topics.activation.governor import TopicCandidate, TopicEvidence, plan_windows
from langgraph_topics.activation.grey import decide_dormancy, over_the_cap
from langgraph_topics.nodes.topic_window import with_native_evidence
from langgraph_topics.retrieval.evidence import UNSPLIT_GROUP, Evidence
from langgraph_topics.roles.llm.topic_window import parse_verdict
from langgraph_topics.roles.protocols import Roles
from langgraph_topics.services import TopicServices, thread_directory_name
from langgraph_topics.settings import DEFAULT_WINDOW_INPUT_TOKENS, Settings
from langgraph_topics.state.records import TopicRecord
from langgraph_topics.state.schema import TopicState
from langgraph_topics.tuning.log import read_tuning_log, tuning_log_path

ORDER = ["sourdough", "stocks", "kyoto", "fitness", "stocks", "kyoto"]
SOURDOUGH = "How often should I feed the sourdough starter when it lives in the fridge?"


@dataclass
class GovernedWindow(RecordingTopicWindow):
    """A recording window the governor treats as a model back end (as ``LlmTopicWindow``)."""

    governed: ClassVar[bool] = True


def _candidate(topic_id: str, rank: int | None, relevance: float = 0.5, tokens: int = 1000) -> Any:
    found = None if rank is None else TopicEvidence(rank, relevance, (f"{topic_id}-m",))
    return TopicCandidate(topic_id, f"fp-{topic_id}", found, tokens)


def _topic(topic_id: str, scores: list[float], when: str = "2026-01-01", **extra: Any) -> Any:
    record: TopicRecord = {
        "id": topic_id,
        "name": topic_id,
        "status": "active",
        "parent_id": None,
        "scores": scores,
        "created_at": "2026-01-01T00:00:00+00:00",
        "last_active_at": f"{when}T00:00:00+00:00",
        "message_count": 4,
    }
    return {**record, **extra}


def _log(memory: TopicMemory, thread: str = "t") -> list[dict[str, Any]]:
    path = tuning_log_path(memory.settings.data_dir, thread_directory_name(thread))
    return read_tuning_log(path)


def _chat_line(memory: TopicMemory, thread: str = "t") -> dict[str, Any]:
    return next(line for line in reversed(_log(memory, thread)) if line["mode"] == "chat")


def _skips(memory: TopicMemory, thread: str = "t") -> dict[str, str]:
    """The last chat turn's skips, from its tuning-log line (a split after the reply is a
    run of its own, with events of its own)."""
    line = _chat_line(memory, thread)
    return {
        t: e.get("reason", "")
        for e in line["events"]
        if e["kind"] == "skipped"
        for t in e["topic_ids"]
    }


def _holding(memory: TopicMemory, text: str) -> str:
    store = memory.services.stores("t").topic_store
    return next(
        t for t in store.topic_ids() if any(text in m["content"] for m in store.messages(t))
    )


# --- the plan -----------------------------------------------------------------------------------


def test_the_plan_skips_what_cannot_enter_and_holds_the_cap() -> None:
    settings = Settings(topic_window_input_tokens=2500, topic_window_reads=None)
    decisions = plan_windows(
        [
            _candidate("far", rank=90),
            _candidate("none", rank=None),
            _candidate("faint", rank=3, relevance=0.02),
            _candidate("best", rank=0),
            _candidate("second", rank=5),
            _candidate("third", rank=7),
        ],
        settings=settings,
        reach_rank=50,
        requested=False,
        reusable=lambda c: False,
    )
    assert {t: d["decision"] for t, d in decisions.items()} == {
        "far": "skip",
        "none": "skip",
        "faint": "skip",
        "best": "read",
        "second": "read",
        "third": "skip",
    }
    assert decisions["far"]["reason"] == "out_of_reach"
    assert "ranks 91, past the 50 messages" in decisions["far"]["detail"]
    assert decisions["none"]["reason"] == "out_of_reach"
    assert decisions["faint"]["reason"] == "under_floor"
    # The cap cuts the weakest evidence: 1,000 + 1,000 fit in 2,500, a third does not.
    assert decisions["third"]["reason"] == "input_cap"
    assert decisions["best"]["input_tokens"] == 1000


def test_the_plan_reuses_unchanged_results_and_reads_what_was_asked_for() -> None:
    settings = Settings(topic_window_input_tokens=None, topic_window_reads=None)
    candidates = [_candidate("same", rank=2), _candidate("far", rank=500)]
    decisions = plan_windows(
        candidates,
        settings=settings,
        reach_rank=50,
        requested=False,
        reusable=lambda c: c.topic_id == "same",
    )
    assert decisions["same"]["decision"] == "reuse"
    # An earlier pass spent the cap's worth: a reuse sends nothing and still fits.
    capped = plan_windows(
        candidates[:1],
        settings=Settings(topic_window_input_tokens=10),
        reach_rank=50,
        requested=False,
        reusable=lambda c: True,
        spent=10,
    )
    assert capped["same"]["decision"] == "reuse"
    # Topics the main model (or a recall cue, or the index) asked for are read, even far.
    asked = plan_windows(
        candidates, settings=settings, reach_rank=50, requested=True, reusable=lambda c: True
    )
    assert {t: d["decision"] for t, d in asked.items()} == {"same": "read", "far": "read"}


def test_the_native_window_is_not_governed(roles: Roles) -> None:
    settings = Settings()
    assert not governor.governs(roles.topic_window, settings)
    assert governor.governs(GovernedWindow(roles.topic_window), settings)
    assert not governor.governs(
        GovernedWindow(roles.topic_window), Settings(topic_window_governor=False)
    )


def test_the_input_cap_is_a_setting_with_an_environment_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LANGGRAPH_TOPICS_TOPIC_WINDOW_INPUT_TOKENS", raising=False)
    assert Settings().topic_window_input_tokens == DEFAULT_WINDOW_INPUT_TOKENS
    monkeypatch.setenv("LANGGRAPH_TOPICS_TOPIC_WINDOW_INPUT_TOKENS", "12000")
    assert Settings().topic_window_input_tokens == 12000
    monkeypatch.setenv("LANGGRAPH_TOPICS_TOPIC_WINDOW_INPUT_TOKENS", "0")
    assert Settings().topic_window_input_tokens is None
    monkeypatch.setenv("LANGGRAPH_TOPICS_TOPIC_WINDOW_INPUT_TOKENS", "lots")
    with pytest.raises(ValueError, match="LANGGRAPH_TOPICS_TOPIC_WINDOW_INPUT_TOKENS"):
        Settings()
    monkeypatch.delenv("LANGGRAPH_TOPICS_TOPIC_WINDOW_INPUT_TOKENS")
    with pytest.raises(ValueError, match="topic_window_input_tokens must be positive"):
        Settings(topic_window_input_tokens=-5)


def test_a_reply_under_the_threshold_needs_only_its_score() -> None:
    # Score first; a low score's malformed rest is dropped, not retried.
    verdict, dropped = parse_verdict(
        "<topic_result><relevance_score>0.1</relevance_score><summary>no end</topic_result>",
        {"m1"},
    )
    assert verdict == {"relevance_score": 0.1, "referenced_message_ids": [], "summary": ""}
    assert dropped == 0
    # Order does not matter to the parser: ids after the summary are read all the same.
    verdict, _ = parse_verdict(
        "<topic_result><summary>Gion</summary><relevance_score>0.8</relevance_score>"
        "<referenced_messages>m1</referenced_messages></topic_result>",
        {"m1"},
    )
    assert verdict["referenced_message_ids"] == ["m1"] and verdict["summary"] == "Gion"


# --- grey activation and the hard cap -----------------------------------------------------------


def test_a_skipped_topic_keeps_its_scores_and_counts_a_round_at_risk() -> None:
    settings = Settings(min_active=1, default_active=3, max_active=5, dormancy_rounds=3)
    strong, kept = _topic("strong", [0.9]), _topic("kept", [0.8, 0.7])
    decision = decide_dormancy([strong, kept], settings, scored={"strong"}, unreached={"kept"})
    # Nothing is invented for it: a high average stays high, but the round is at risk.
    assert decision.keep == ["strong", "kept"] and decision.low_rounds["kept"] == 1
    at_risk = _topic("kept", [0.8, 0.7], low_rounds=2)
    asleep = decide_dormancy([strong, at_risk], settings, scored={"strong"}, unreached={"kept"})
    assert asleep.dormant == {"kept": "no evidence in reach of the window for 3 rounds"}
    # Skipped for the cap (neither scored nor unreached): the stretch does not move.
    held = decide_dormancy([strong, at_risk], settings, scored={"strong"})
    assert held.dormant == {} and held.low_rounds["kept"] == 0


def test_the_maximum_holds_for_topics_never_scored() -> None:
    settings = Settings(min_active=1, default_active=2, max_active=3)
    topics = [_topic(f"t{i}", [], when=f"2026-01-0{i + 1}") for i in range(5)]
    decision = decide_dormancy(topics, settings)
    # The most recently active stay.
    assert sorted(decision.keep) == ["t2", "t3", "t4"]
    assert set(decision.dormant) == {"t0", "t1"}
    assert over_the_cap(topics, settings).keys() == {"t0", "t1"}
    assert "by recency past the maximum of 3" in over_the_cap(topics, settings)["t0"]


# --- through the graph --------------------------------------------------------------------------


def _governed_memory(
    make_memory: MemoryFactory, roles: Roles, **settings: Any
) -> tuple[TopicMemory, GovernedWindow]:
    window = GovernedWindow(roles.topic_window)
    defaults: dict[str, Any] = {
        "min_active": 1,
        "default_active": 10,
        "max_active": 20,
        "topic_window_reads": None,
    }
    memory = make_memory(
        budget=900, roles=with_roles(roles, topic_window=window), **(defaults | settings)
    )
    memory.import_messages("t", subject_records(ORDER))
    window.reset()
    return memory, window


def test_a_topic_without_evidence_in_reach_is_skipped_and_logged(
    make_memory: MemoryFactory, roles: Roles, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A reach of a few messages: the topics holding none of the thread's best are not read.
    monkeypatch.setattr(governor, "MIN_REACH", 4)
    monkeypatch.setattr(governor, "REACH_FACTOR", 0.0)
    memory, window = _governed_memory(make_memory, roles)
    before = memory.state("t")["topics"]
    active = {t for t, r in before.items() if r["status"] == "active"}
    sourdough = _holding(memory, "acetone")

    memory.chat("t", SOURDOUGH)

    skipped = _skips(memory)
    read = set(window.topics_read())
    assert skipped and set(skipped.values()) <= {"out_of_reach", "under_floor"}
    assert sourdough in read and sourdough not in skipped
    assert read | set(skipped) == active and not read & set(skipped)
    line = _chat_line(memory)
    for topic_id, reason in skipped.items():
        logged = line["topics"][topic_id]
        assert logged["window"] == "skipped" and logged["skipped"] == reason
        assert "past the 4 messages" in logged["skip_detail"] or "floor" in logged["skip_detail"]
    assert line["topics"][sourdough]["window"] == "read"
    assert line["topic_windows"]["skipped"] == len(skipped)
    assert line["topic_windows"]["read"] == len(read)
    # Grey scores come from what was read: a skipped topic gains no score (no 0), only a round
    # at risk; the read topic's score is appended.
    after = memory.state("t")["topics"]
    for topic_id in skipped:
        assert after[topic_id]["scores"] == before[topic_id]["scores"]
    assert len(after[sourdough]["scores"]) == len(before[sourdough]["scores"]) + 1
    assert memory.check("t").ok


def test_a_result_is_reused_on_a_tool_round(make_memory: MemoryFactory, roles: Roles) -> None:
    memory, window = _governed_memory(make_memory, roles)
    memory.chat("t", SOURDOUGH)
    first = set(window.topics_read())
    assert first
    window.reset()

    # A tool round of the same user turn: the question and the topics are unchanged.
    call = AIMessage("", id="tool-call-1", tool_calls=[{"name": "timer", "args": {}, "id": "c1"}])
    state = memory.run_turn(
        "t",
        {
            "messages": [call, ToolMessage("20 minutes", tool_call_id="c1", id="tool-1")],
            "mode": "assemble",
        },
    )
    reused = {t for t, r in state["topic_results"].items() if r.get("window") == "reused"}
    assert reused, state["topic_results"]
    assert not set(window.topics_read()) & reused
    assert all(state["topic_results"][t]["input_tokens"] == 0 for t in reused)


def test_the_cap_holds_and_a_capped_topic_is_not_at_risk(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    memory, window = _governed_memory(make_memory, roles, topic_window_input_tokens=1)
    before = memory.state("t")["topics"]

    memory.chat("t", SOURDOUGH)

    assert window.topics_read() == []
    skipped = _skips(memory)
    assert skipped and set(skipped.values()) <= {"input_cap", "out_of_reach", "under_floor"}
    assert "input_cap" in skipped.values()
    after = memory.state("t")["topics"]
    for topic_id, reason in skipped.items():
        assert after[topic_id]["scores"] == before[topic_id]["scores"]
        if reason == "input_cap":
            assert after[topic_id].get("low_rounds", 0) == before[topic_id].get("low_rounds", 0)
    assert _chat_line(memory)["topic_windows"]["input_tokens"] == 0


def test_the_active_set_is_capped_after_a_large_import(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    window = RecordingTopicWindow(roles.topic_window)
    memory = make_memory(
        budget=900,
        roles=with_roles(roles, topic_window=window),
        min_active=1,
        default_active=2,
        max_active=3,
    )
    memory.import_messages("t", subject_records(ORDER + ["sourdough", "fitness"]))
    topics = memory.state("t")["topics"]
    active = [r for r in topics.values() if r["status"] == "active"]
    dormant = [r for r in topics.values() if r["status"] == "dormant"]
    assert len(active) <= 3 and dormant, {t: r["status"] for t, r in topics.items()}
    # The most recently active stay; the others sleep, still found by a search that wakes
    # them (the index tells archived topics from the rest only).
    assert min(r["last_active_at"] for r in active) >= max(r["last_active_at"] for r in dormant)
    index = memory.services.stores("t").topic_index
    found = {t for t, _ in index.search("sourdough stocks kyoto fitness", k=50)}
    assert {r["id"] for r in dormant} <= found
    events = memory.state("t")["events"]
    assert {t for e in events if e["kind"] == "dormant" for t in e["topic_ids"]} == {
        r["id"] for r in dormant
    }
    assert memory.check("t").ok

    window.reset()
    memory.chat("t", SOURDOUGH)
    # The first turn after the import reads at most max_active topics, as any turn does.
    assert 0 < len(window.topics_read()) <= 3
    assert memory.check("t").ok


# --- the turn's model reads and the native scores -----------------------------------------------


def _scored(topic_id: str, rank: int, native: float | None) -> Any:
    found = TopicEvidence(rank, 0.6, (f"{topic_id}-m",), native_score=native)
    return TopicCandidate(topic_id, f"fp-{topic_id}", found, 1000)


def test_the_plan_reads_the_best_evidence_within_the_turns_reads() -> None:
    settings = Settings(topic_window_input_tokens=None, topic_window_reads=2)
    candidates = [
        _scored("third", 9, 0.5),
        _scored("best", 0, 0.8),
        _scored("low", 1, 0.2),
        _scored("second", 4, 0.6),
    ]
    decisions = plan_windows(
        candidates, settings=settings, reach_rank=50, requested=False, reusable=lambda c: False
    )
    assert {t: d["decision"] for t, d in decisions.items()} == {
        "third": "skip",
        "best": "read",
        "low": "skip",
        "second": "read",
    }
    # The native reading of the same evidence says "low" holds nothing the window needs.
    assert decisions["low"]["reason"] == "native_low" and "0.20" in decisions["low"]["detail"]
    assert decisions["third"]["reason"] == "reads_cap"
    # A skip carries the native score: the topic is scored this turn, nothing is quoted.
    assert decisions["third"]["native_score"] == 0.5 and decisions["low"]["native_score"] == 0.2
    # Reads of an earlier pass count: a topic asked for later waits for none past the limit.
    later = plan_windows(
        [_scored("asked", 30, 0.4)],
        settings=settings,
        reach_rank=50,
        requested=True,
        reusable=lambda c: False,
        reads=2,
    )
    assert later["asked"]["reason"] == "reads_cap"
    assert plan_windows(
        [_scored("asked", 30, 0.4)],
        settings=settings,
        reach_rank=50,
        requested=True,
        reusable=lambda c: False,
        reads=1,
    )["asked"] == {"decision": "read", "fingerprint": "fp-asked", "input_tokens": 1000}
    with pytest.raises(ValueError, match="topic_window_reads must not be negative"):
        Settings(topic_window_reads=-1)


@dataclass
class ModelLikeWindow(GovernedWindow):
    """A governed window with the native back end it falls back on (as ``LlmTopicWindow``)."""

    @property
    def fallback(self) -> Any:
        return self.inner


def test_topics_past_the_reads_are_scored_natively_and_quote_nothing(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    window = ModelLikeWindow(roles.topic_window)
    memory = make_memory(
        budget=900,
        roles=with_roles(roles, topic_window=window),
        min_active=1,
        default_active=10,
        max_active=20,
        topic_window_reads=1,
    )
    memory.import_messages("t", subject_records(ORDER))
    window.reset()
    before = memory.state("t")["topics"]
    active = {t for t, r in before.items() if r["status"] == "active"}
    assert len(active) > 1

    state = memory.run_turn("t", {"messages": [("user", SOURDOUGH)], "mode": "context"})

    read = window.topics_read()
    assert len(read) == 1 and read[0] == _holding(memory, "acetone")
    results = state["topic_results"]
    native = {t for t, r in results.items() if r.get("window") == "native"}
    assert native and native | set(read) <= active and not native & set(read)
    for topic_id in native:
        # A score for grey activation; no reference, no summary: the window holds only what
        # the model chose.
        assert (
            results[topic_id]["referenced_message_ids"] == [] and not results[topic_id]["summary"]
        )
        assert 0 <= results[topic_id]["relevance_score"] <= 1
        assert topic_id not in state["context"]["topic_ids"]
    reasons = {
        t: e.get("reason")
        for e in state["events"]
        if e["kind"] == "skipped"
        for t in e["topic_ids"]
    }
    assert {reasons[t] for t in native} <= {
        "reads_cap",
        "native_low",
        "out_of_reach",
        "under_floor",
    }
    assert memory.check("t").ok


def test_native_scores_feed_grey_activation(make_memory: MemoryFactory, roles: Roles) -> None:
    window = ModelLikeWindow(roles.topic_window)
    memory = make_memory(
        budget=900,
        roles=with_roles(roles, topic_window=window),
        min_active=1,
        default_active=10,
        max_active=20,
        topic_window_reads=1,
    )
    memory.import_messages("t", subject_records(ORDER))
    before = memory.state("t")["topics"]
    memory.chat("t", SOURDOUGH)
    after = memory.state("t")["topics"]
    line = _chat_line(memory)
    natives = [t for t, info in line["topics"].items() if info.get("window") == "native"]
    assert natives and line["topic_windows"]["native"] == len(natives)
    for topic_id in natives:
        assert line["topics"][topic_id]["skipped"]  # why no model read it
        assert len(after[topic_id]["scores"]) == min(
            len(before[topic_id]["scores"]) + 1, memory.settings.score_window
        )


def test_a_model_reading_is_completed_with_the_native_one() -> None:
    model: Any = {
        "relevance_score": 0.6,
        "referenced_message_ids": ["m2", "m1"],
        "summary": "",
    }
    native: Any = {
        "relevance_score": 0.5,
        "referenced_message_ids": ["m1", "m7"],
        "reference_relevance": [0.9, 0.4],
        "summary": "extractive",
        "card": {"text": "extractive"},
    }
    merged = with_native_evidence(model, native, 0.3)
    # The model's references first, at its score and order; the native ones it did not name
    # after them at their evidence relevance; the higher score; the native summary it lacks.
    assert merged["referenced_message_ids"] == ["m2", "m1", "m7"]
    # m1 is worth what the evidence says (0.9), not the 0.3 of its place in the model's list.
    assert merged["reference_relevance"] == [0.6, 0.9, 0.4]
    assert merged["relevance_score"] == 0.6 and merged["summary"] == "extractive"
    assert "card" in merged
    # A model that finds the topic irrelevant takes none of the evidence away.
    vetoed = with_native_evidence({**model, "relevance_score": 0.1}, native, 0.3)
    assert vetoed["referenced_message_ids"] == ["m1", "m7"] and vetoed["relevance_score"] == 0.5
    # Neither reading above the threshold: nothing to quote.
    quiet = with_native_evidence(
        {**model, "relevance_score": 0.1}, {**native, "relevance_score": 0.2}, 0.3
    )
    assert quiet["referenced_message_ids"] == [] and quiet["summary"] == ""


# --- the active cap and the question's best evidence --------------------------------------------


class _BestEvidence:
    """The turn's evidence as the cap reads it: its best positions and each one's topic."""

    def __init__(self, ranked_topics: list[str]) -> None:
        self.ranked_topics = ranked_topics

    def top(self, k: int) -> list[int]:
        return list(range(min(k, len(self.ranked_topics))))

    def group_of(self, position: int) -> str:
        return self.ranked_topics[position]


def _active(topic_id: str, last_active_at: str) -> TopicRecord:
    return cast(
        TopicRecord,
        {"id": topic_id, "status": "active", "scores": [], "last_active_at": last_active_at},
    )


def test_past_the_cap_the_topic_holding_the_best_evidence_is_still_read() -> None:
    """A topic holding the question's best message is read even when it ranks last.

    Seed 000 §4.7 caps the reads at ``max_active``; the topics past the cap used to be the
    ones ranking last on their past scores and recency, whatever they held: a finer split
    left the question's best evidence unread in an active topic.
    """
    settings = Settings(min_active=1, default_active=2, max_active=3)
    services = cast(TopicServices, SimpleNamespace(settings=settings))
    topics = {
        t: _active(t, f"2023-05-0{day}T10:00:00")
        for day, t in enumerate(["old", "older", "recent", "newest"], start=1)
    }
    state = cast(TopicState, {"topics": topics, "events": []})

    assert set(over_max_active(state, services)) == {"old"}
    evidence = _BestEvidence([UNSPLIT_GROUP, "old", "old"])
    skipped = over_max_active(state, services, lambda: cast(Evidence, evidence))
    assert set(skipped) == {"older"}
    assert skipped["older"]["reason"] == "max_active"
    # Within the cap nothing is asked of the evidence.
    assert (
        over_max_active(
            cast(TopicState, {"topics": dict(list(topics.items())[:3]), "events": []}),
            services,
            lambda: pytest.fail("the evidence was computed under the cap"),
        )
        == {}
    )
