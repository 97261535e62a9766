"""A chat turn answers before its split: the split is planned after the reply, then written."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest
from conftest import MemoryFactory
from fakes import with_roles

from langgraph_topics import TopicMemory
from langgraph_topics.roles.protocols import Roles, SplitPlan, TopicInfo
from langgraph_topics.splitting.prepared import PreparedSplit, still_valid
from langgraph_topics.state.records import StoredMessage

SUBJECTS = ("kyoto temples and the spring trip", "sourdough starter feeding with rye flour")


def _line(i: int) -> str:
    return f"Note {i} on {SUBJECTS[i % 2]}, with a few more words so the window fills up"


class _HeldSplitter:
    """Wraps a splitter; holds every call until released (a slow model, made exact)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.entered = threading.Event()
        self.release = threading.Event()
        self.calls = 0

    def split(
        self, units: Sequence[Sequence[StoredMessage]], topics: Sequence[TopicInfo]
    ) -> SplitPlan:
        self.calls += 1
        self.entered.set()
        assert self.release.wait(30), "the test never released the splitter"
        plan: SplitPlan = self.inner.split(units, topics)
        return plan


def _chat_until_split_due(memory: TopicMemory, splitter: _HeldSplitter) -> int:
    """Chat until a turn's estimate asks for a split; returns the turns sent."""
    for turn in range(60):
        memory.chat("t", _line(turn))
        # Read without waiting for the split (``memory.state`` would wait for it).
        values = memory.graph.get_state(memory.run_config("t")).values
        if values["estimate"]["split"]:
            assert splitter.entered.wait(30), "the split due was never planned"
            return turn + 1
    raise AssertionError("no turn passed the split trigger")


def test_the_turn_answers_before_its_split_is_planned(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    splitter = _HeldSplitter(roles.splitter)
    memory = make_memory(budget=600, roles=with_roles(roles, splitter=splitter))
    sent = _chat_until_split_due(memory, splitter)
    # The turn that passed the trigger has answered while its splitter is still held.
    assert splitter.calls == 1
    splitter.release.set()
    assert memory.wait_idle("t", timeout=60)
    state = memory.state("t")
    assert state["turn_mode"] == "split"
    assert any(e["kind"] == "split" and e.get("topic_ids") for e in state["events"])
    assert memory.topics("t")
    assert memory.check("t").ok
    assert len(memory.transcript("t")) == 2 * sent


def test_a_turn_during_planning_reads_on_and_the_split_lands_whole(
    make_memory: MemoryFactory, roles: Roles, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As with a model splitter: the next turn does not wait for the plan.
    monkeypatch.setattr("langgraph_topics.memory.waits_on_models", lambda roles: True)
    splitter = _HeldSplitter(roles.splitter)
    memory = make_memory(budget=600, roles=with_roles(roles, splitter=splitter))
    sent = _chat_until_split_due(memory, splitter)
    reply = memory.chat("t", _line(sent))  # answered while the plan is held
    assert isinstance(reply, str)
    assert not memory.topics("t"), "nothing is split before the plan is written"
    splitter.release.set()
    assert memory.wait_idle("t", timeout=60)
    topics = memory.topics("t")
    assert topics
    assert memory.check("t").ok
    assert len(memory.transcript("t")) == 2 * (sent + 1)
    # The split took the oldest messages; the turn sent during its planning stays unsplit.
    working = [m.content for m in memory.state("t")["messages"]]
    assert _line(sent) in working
    assert _line(0) not in working


def test_the_setting_off_splits_before_the_topic_windows_read(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    memory = make_memory(budget=600, split_after_reply=False)
    for turn in range(40):
        memory.chat("t", _line(turn))
        state = memory.state("t")
        if any(e["kind"] == "split" and e.get("topic_ids") for e in state["events"]):
            assert state["turn_mode"] == "chat"  # the split was a step of the chat turn
            break
    else:
        raise AssertionError("no turn split")
    assert memory.check("t").ok


def test_native_splits_land_before_the_next_call_reads(
    make_memory: MemoryFactory,
) -> None:
    memory = make_memory(budget=600)
    for turn in range(30):
        memory.chat("t", _line(turn))
        # Every read sees the split of the turn before it already written (deterministic).
        memory.state("t")
        assert memory.wait_idle("t", timeout=0), "a read returned before the split landed"
    assert memory.topics("t")
    assert memory.check("t").ok
    assert len(memory.transcript("t")) == 60


def _prepared(ids: Sequence[str], last_split_id: str | None = None) -> PreparedSplit:
    units = [[{"id": i, "role": "user", "content": i}] for i in ids]
    return PreparedSplit(
        units=units,  # type: ignore[arg-type]
        destinations=[("new", "a")] * len(ids),
        new_topics={"a": {"key": "a", "name": "A", "brief": "a"}},
        last_split_id=last_split_id,
    )


def test_a_prepared_split_that_no_longer_fits_is_dropped() -> None:
    prepared = _prepared(["m1", "m2"])
    current = [{"id": i, "role": "user", "content": i} for i in ("m1", "m2", "m3")]
    store: Any = None  # not read: no destination is an existing topic
    assert still_valid(prepared, current, {}, store, None) is None  # type: ignore[arg-type]
    moved = [{"id": i, "role": "user", "content": i} for i in ("m2", "m3")]
    assert "oldest unsplit" in str(still_valid(prepared, moved, {}, store, None))  # type: ignore[arg-type]
    assert "another split" in str(still_valid(prepared, current, {}, store, "m0"))  # type: ignore[arg-type]
