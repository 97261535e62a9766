"""Conservative dormancy (seed 000 §4.7, §15.6): never on one low round, never when just woken."""

from __future__ import annotations

from conftest import MemoryFactory
from conversations import subject_records
from fakes import FixedScoreTopicWindow, with_roles

from langgraph_topics import TopicMemory
from langgraph_topics.activation.grey import decide_dormancy, dormancy_threshold
from langgraph_topics.roles.protocols import Roles, TopicInfo
from langgraph_topics.settings import Settings
from langgraph_topics.state.records import TopicRecord

SETTINGS = Settings(min_active=1, default_active=3, max_active=5, dormancy_rounds=3)


def _topic(topic_id: str, scores: list[float], **extra: object) -> TopicRecord:
    record: TopicRecord = {
        "id": topic_id,
        "name": topic_id,
        "status": "active",
        "parent_id": None,
        "scores": scores,
        "created_at": "2026-01-01T00:00:00+00:00",
        "last_active_at": "2026-01-01T00:00:00+00:00",
        "message_count": 10,
    }
    return {**record, **extra}  # type: ignore[typeddict-item]


def _run_rounds(scores: list[float], rounds: int) -> list[tuple[str, int]]:
    """Feed a low topic ``rounds`` scored rounds; what became of it after each."""
    strong = _topic("strong", [0.9])
    weak = _topic("weak", scores)
    seen: list[tuple[str, int]] = []
    for _ in range(rounds):
        weak = {**weak, "scores": [*weak["scores"], 0.0][-5:]}
        decision = decide_dormancy([strong, weak], SETTINGS)
        if "weak" in decision.dormant:
            seen.append(("dormant", 0))
            break
        weak = {**weak, "low_rounds": decision.low_rounds["weak"]}
        seen.append(("active", decision.low_rounds["weak"]))
    return seen


def test_one_low_round_never_puts_a_topic_to_sleep() -> None:
    # A topic whose average is far under the dormancy threshold stays active for two rounds
    # (counting them) and falls asleep on the third consecutive one.
    assert _run_rounds([0.0], 3) == [("active", 1), ("active", 2), ("dormant", 0)]


def test_a_round_back_above_the_threshold_starts_the_stretch_again() -> None:
    strong = _topic("strong", [0.9])
    weak = _topic("weak", [0.0, 0.0], low_rounds=2)
    decision = decide_dormancy([strong, weak], SETTINGS)
    assert "weak" in decision.dormant and "3 rounds" in decision.dormant["weak"]
    recovered = _topic("weak", [0.0, 0.0, 0.9], low_rounds=2)
    decision = decide_dormancy([strong, recovered], SETTINGS)
    assert decision.keep == ["strong", "weak"] and decision.low_rounds["weak"] == 0


def test_the_reason_names_the_average_the_threshold_and_the_stretch() -> None:
    topics = [_topic("strong", [0.9]), _topic("weak", [0.0], low_rounds=2)]
    reason = decide_dormancy(topics, SETTINGS).dormant["weak"]
    threshold = dormancy_threshold(2)
    assert (
        reason
        == f"average 0.00 under the dormancy threshold {threshold:.2f} at 2 active for 3 rounds"
    )


def test_a_round_without_a_score_does_not_advance_the_stretch() -> None:
    topics = [_topic("strong", [0.9]), _topic("weak", [0.0], low_rounds=2)]
    # The weak topic's window failed this turn: no new evidence, so no new strike.
    decision = decide_dormancy(topics, SETTINGS, scored={"strong"})
    assert decision.dormant == {} and decision.low_rounds["weak"] == 2


def test_a_topic_activated_this_turn_cannot_fall_asleep_in_it() -> None:
    topics = [_topic("strong", [0.9]), _topic("woken", [0.0, 0.0, 0.0], low_rounds=5)]
    decision = decide_dormancy(topics, SETTINGS, protected={"woken"})
    assert decision.dormant == {} and decision.low_rounds["woken"] == 0
    # Even past the hard maximum the topics woken this turn keep their place.
    many = [_topic(f"t{i}", [0.9]) for i in range(5)] + [_topic("woken", [0.0])]
    decision = decide_dormancy(many, SETTINGS, protected={"woken"})
    assert "woken" in decision.keep and len(decision.dormant) == 1


def test_core_topics_are_never_put_to_sleep_by_rank() -> None:
    # Five active topics, the default is 3: ranks 4 and 5 must hold the activation threshold
    # (0.35 at 5 active) or they are at risk; a core topic is exempt from that rule.
    topics = [_topic(f"t{i}", [0.9]) for i in range(3)]
    topics += [_topic("ranked", [0.3], low_rounds=2), _topic("core", [0.3], low_rounds=2)]
    decision = decide_dormancy(topics, SETTINGS, core={"core"})
    assert "ranked" in decision.dormant and decision.dormant["ranked"].startswith("rank ")
    assert "core" in decision.keep and decision.low_rounds["core"] == 0


def test_the_maximum_is_a_hard_bound() -> None:
    topics = [_topic(f"t{i}", [0.9 - i / 100]) for i in range(7)]
    decision = decide_dormancy(topics, SETTINGS)
    assert set(decision.dormant) == {"t5", "t6"}
    assert all("beyond the maximum of 5" in r for r in decision.dormant.values())


def _low_scores(make_memory: MemoryFactory, roles: Roles, keep: str | None) -> TopicMemory:
    """A memory whose topic window scores every topic 0 except the one holding ``keep``."""
    holder: dict[str, str] = {}

    def score_of(topic: TopicInfo) -> float:
        return 0.9 if topic["id"] == holder.get("id") else 0.0

    memory = make_memory(
        budget=900, roles=with_roles(roles, topic_window=FixedScoreTopicWindow(score_of))
    )
    memory.import_messages(
        "t", subject_records(["stocks", "kyoto", "sourdough", "fitness", "stocks", "kyoto"])
    )
    store = memory.services.stores("t").topic_store
    if keep is not None:
        holder["id"] = next(
            t for t in store.topic_ids() if any(keep in m["content"] for m in store.messages(t))
        )
    return memory


def test_a_chat_turn_with_low_scores_puts_no_topic_to_sleep_at_once(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    memory = _low_scores(make_memory, roles, "Gion")
    memory.chat("t", "Anything else about the ryokan near Gion?")
    state = memory.state("t")
    assert not [e for e in state["events"] if e["kind"] == "dormant"]
    # The zero-scored topics are counting their stretch instead.
    assert any(r.get("low_rounds", 0) >= 1 for r in state["topics"].values())
    for turn in range(SETTINGS.dormancy_rounds + 1):
        memory.chat("t", f"And the ryokan near Gion, detail {turn}?")
    dormant = [e for e in memory.state("t")["events"] if e["kind"] == "dormant"]
    seen = {t["status"] for t in memory.state("t")["topics"].values()}
    assert dormant or "dormant" in seen, "a lasting low score does put topics to sleep"
    assert memory.check("t").ok


def test_a_topic_woken_by_a_recall_cue_is_still_active_when_the_turn_ends(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    # Every topic scores 0, the woken one too: before, it fell asleep again in the same turn.
    memory = _low_scores(make_memory, roles, None)
    topics = {
        topic_id: {**record, "status": "dormant", "scores": [0.0] * 5, "low_rounds": 4}
        for topic_id, record in memory.state("t")["topics"].items()
    }
    index = memory.services.stores("t").topic_index
    for topic_id in topics:
        index.set_status(topic_id, "dormant")
    memory.graph.update_state(memory.run_config("t"), {"topics": topics}, as_node="bookkeeping")

    memory.chat("t", "You forgot, I told you before about the sourdough starter and acetone")

    state = memory.state("t")
    woken = {
        t
        for e in state["events"]
        if e["kind"] == "activated" and e.get("reason") == "recall_cue"
        for t in e["topic_ids"]
    }
    assert woken, state["events"]
    for topic_id in woken:
        record = state["topics"][topic_id]
        assert record["status"] == "active", record
        assert record["scores"][-1] == 0.0 and "low_rounds" not in record
    asleep = {t for e in state["events"] if e["kind"] == "dormant" for t in e["topic_ids"]}
    assert not asleep & woken


def test_a_core_topic_is_not_put_to_sleep_by_rank_in_a_turn(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    # Every topic scores 0.3: over the dormancy threshold, under the activation one, so past
    # the default count each is at risk by rank, except the core one (pinned, rated, recalled).
    window = FixedScoreTopicWindow(lambda topic: 0.3)
    memory = make_memory(
        budget=900,
        roles=with_roles(roles, topic_window=window),
        min_active=1,
        default_active=1,
        max_active=20,
    )
    memory.import_messages(
        "t", subject_records(["stocks", "kyoto", "sourdough", "fitness", "stocks", "kyoto"])
    )
    topics = dict(memory.state("t")["topics"])
    assert len(topics) >= 4
    core = sorted(topics)[-1]  # not the first: no help from the order of a tie
    topics[core] = {**topics[core], "usage": {"pinned": True, "rating": 5, "recalled": 3}}
    memory.graph.update_state(memory.run_config("t"), {"topics": topics}, as_node="bookkeeping")
    asleep: set[str] = set()
    for turn in range(SETTINGS.dormancy_rounds + 2):
        memory.chat("t", f"Let us talk about something else entirely, number {turn}")
        events = memory.state("t")["events"]
        asleep |= {t for e in events if e["kind"] == "dormant" for t in e["topic_ids"]}
    reasons = [e["reason"] for e in memory.state("t")["events"] if e["kind"] == "dormant"]
    assert asleep and core not in asleep, reasons
    assert memory.state("t")["topics"][core]["status"] == "active"
