"""Activation: the activate loop, the parallel fan-out, recall cues."""

from __future__ import annotations

from conftest import MemoryFactory
from conversations import subject_records
from fakes import ActivatingResponder, RecordingTopicWindow, with_roles

from langgraph_topics import TopicMemory
from langgraph_topics.roles.protocols import Roles
from langgraph_topics.state.records import TopicStatus

SUBJECT_ORDER = [
    "stocks",
    "kyoto",
    "sourdough",
    "fitness",
    "stocks",
    "kyoto",
    "sourdough",
    "fitness",
]


def _imported(make_memory: MemoryFactory, roles: Roles, **settings: object) -> TopicMemory:
    """A memory with a conversation on four subjects imported and split into topics."""
    memory = make_memory(budget=900, roles=roles, **settings)
    memory.import_messages("t", subject_records(SUBJECT_ORDER))
    assert len(memory.topics("t")) >= 4
    return memory


def _set_status(memory: TopicMemory, statuses: dict[str, TopicStatus]) -> None:
    topics = dict(memory.state("t")["topics"])
    index = memory.services.stores("t").topic_index
    for topic_id, status in statuses.items():
        topics[topic_id] = {**topics[topic_id], "status": status}
        index.set_status(topic_id, status)
    memory.graph.update_state(
        {"configurable": {"thread_id": "t"}}, {"topics": topics}, as_node="bookkeeping"
    )


def _topic_holding(memory: TopicMemory, text: str) -> str:
    store = memory.services.stores("t").topic_store
    for topic_id in store.topic_ids():
        if any(text in m["content"] for m in store.messages(topic_id)):
            return topic_id
    raise AssertionError(f"no topic holds {text!r}")


def test_activate_loop_reads_only_newly_activated_topics(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    window = RecordingTopicWindow(roles.topic_window)
    responder = ActivatingResponder(query="sourdough starter acetone feeding fridge")
    # The split inside the turn, before the first read (as seed 000 §4.1 orders it), so the
    # first pass holds the topics it touched as well.
    memory = _imported(
        make_memory,
        with_roles(roles, topic_window=window, responder=responder),
        split_after_reply=False,
        wake_by_evidence=False,  # the loop itself: the evidence would wake the topic first
    )
    topic_ids = [t["id"] for t in memory.topics("t")]
    sourdough = _topic_holding(memory, "acetone")
    dormant = {t: "dormant" for t in topic_ids if t != topic_ids[0]}
    dormant[sourdough] = "dormant"
    _set_status(memory, dormant)  # type: ignore[arg-type]
    active_before = {t for t in topic_ids if t not in dormant}
    window.reset()

    memory.chat("t", "Can you remind me how to rescue the starter?")

    state = memory.state("t")
    # The weak-results search (the active topic says nothing about starters) or the responder's
    # activate_topic call, whichever comes first, brings the dormant sourdough topic in.
    activated = [
        e
        for e in state["events"]
        if e["kind"] == "activated" and e.get("reason") in ("tool_call", "weak_results")
    ]
    assert activated, state["events"]
    assert sourdough in {t for e in activated for t in e["topic_ids"]}
    assert any(
        e["kind"] == "index_search" and e.get("reason") == "tool_call" for e in state["events"]
    )
    # Topics this turn's split touched are active before the first read; every later
    # activation of the turn (the weak-results search may have run first) is read afterwards.
    touched = {
        t
        for e in state["events"]
        if e["kind"] == "activated" and e.get("reason") == "split"
        for t in e["topic_ids"]
    }
    newly = {
        t
        for e in state["events"]
        if e["kind"] == "activated" and e.get("reason") != "split"
        for t in e["topic_ids"]
    }
    reads = window.topics_read()
    # Each topic read once this turn; the first pass read the active topics, the activation
    # pass only the newly activated ones (earlier results were reused).
    assert len(reads) == len(set(reads))
    first_pass = {r["topic_id"] for r in state["topic_results"].values() if r["round"] == 0}
    second_pass = {r["topic_id"] for r in state["topic_results"].values() if r["round"] >= 1}
    assert first_pass == active_before | touched
    assert second_pass == newly - touched
    assert set(reads) == first_pass | second_pass
    assert responder.calls[0] is True and len(responder.calls) == 2
    assert memory.check("t").ok


def test_topic_windows_of_one_turn_run_concurrently(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    window = RecordingTopicWindow(roles.topic_window, delay=0.3)
    memory = _imported(make_memory, with_roles(roles, topic_window=window))
    topic_ids = [t["id"] for t in memory.topics("t")]
    _set_status(memory, dict.fromkeys(topic_ids, "active"))  # type: ignore[arg-type]
    window.reset()

    memory.chat("t", "How is the fitness plan going with the protein intake?")

    calls = window.calls
    assert len(calls) == len(topic_ids) >= 3
    # Overlapping execution: at some moment several topic windows were running at once.
    running_at_start = [sum(1 for _, s, e in calls if s <= start < e) for _, start, _ in calls]
    assert max(running_at_start) >= 3


def _recall(memory: TopicMemory, text: str, needle: str) -> None:
    target = _topic_holding(memory, needle)
    topic_ids = [t["id"] for t in memory.topics("t")]
    _set_status(memory, dict.fromkeys(topic_ids, "dormant"))  # type: ignore[arg-type]
    memory.chat("t", text)
    events = memory.state("t")["events"]
    kinds = [(e["kind"], e.get("reason")) for e in events]
    assert ("recall_cue", None) in kinds
    assert ("index_search", "recall_cue") in kinds
    search = next(e for e in events if e["kind"] == "index_search")
    assert "deep" in search["detail"]
    activated = [e for e in events if e["kind"] == "activated" and e.get("reason") == "recall_cue"]
    assert activated
    # The deep search activates the target, unless this very turn's split already touched it.
    touched = {t for e in events if e["kind"] == "activated" for t in e["topic_ids"]}
    assert target in touched
    assert memory.state("t")["topics"][target]["status"] == "active"
    assert memory.check("t").ok


def test_chinese_recall_cue_triggers_deep_search(make_memory: MemoryFactory, roles: Roles) -> None:
    memory = _imported(make_memory, roles)
    _recall(memory, "你忘了吗？我之前说过市盈率和市净率的区别，你还记得吗？", "市盈率")


def test_english_recall_cue_triggers_deep_search(make_memory: MemoryFactory, roles: Roles) -> None:
    memory = _imported(make_memory, roles)
    _recall(
        memory, "We talked about this before: which ryokan near Gion did you suggest?", "ryokan"
    )


def test_no_cue_no_deep_search(make_memory: MemoryFactory, roles: Roles) -> None:
    memory = _imported(make_memory, roles)
    memory.chat("t", "Which ryokan near Gion is good?")
    assert not [e for e in memory.state("t")["events"] if e["kind"] == "recall_cue"]


def test_a_sleeping_topic_holding_the_best_evidence_wakes_before_the_reads(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    window = RecordingTopicWindow(roles.topic_window)
    memory = _imported(make_memory, with_roles(roles, topic_window=window))
    sourdough = _topic_holding(memory, "acetone")
    _set_status(memory, {sourdough: "dormant"})
    window.reset()

    memory.chat("t", "Why does my sourdough starter smell like acetone in the fridge?")

    state = memory.state("t")
    woken = [e for e in state["events"] if e["kind"] == "activated" and e["reason"] == "evidence"]
    # Woken by the whole-thread evidence, before the topic windows: no index search, no model,
    # and the topic is read in the first pass with the active ones.
    assert [e["topic_ids"] for e in woken] == [[sourdough]]
    assert not any(e["kind"] == "index_search" for e in state["events"])
    assert state["topics"][sourdough]["status"] == "active"
    assert sourdough in window.topics_read()
    assert memory.check("t").ok

    # Off, the sleeping topic stays asleep unless something else asks for it.
    other = _imported(make_memory, roles, wake_by_evidence=False)
    held = _topic_holding(other, "acetone")
    _set_status(other, {held: "dormant"})
    other.chat("t", "Why does my sourdough starter smell like acetone in the fridge?")
    events = other.state("t")["events"]
    assert not any(e["kind"] == "activated" and e.get("reason") == "evidence" for e in events)
