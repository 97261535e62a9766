"""Invariant 1 on every branch: ``update_state`` on forks, unknown checkpoints, crash leftovers.

Issue 41: a message added by ``update_state`` on a fork made ``check`` fail ("31 held but only
30 added"), a removed one was lost ("33 added but only 32 held"); ``check --checkpoint`` with an
unknown id reported invariant failures; every command warned "stored in both … using" about
each split a crash cut short, forever.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from conversations import subject_records
from langchain_core.messages import HumanMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.checks import UnknownCheckpointError
from langgraph_topics.cli.main import main
from langgraph_topics.graph.state_updates import MessageRemovalError

BUDGET = 300


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[TopicMemory]:
    settings = Settings(data_dir=tmp_path / "d", budget_tokens=BUDGET)
    with TopicMemory(settings=settings, embedder=HashEmbedder()) as made:
        made.import_messages("t", subject_records(["stocks", "kyoto", "sourdough", "fitness"])[:32])
        yield made


def _fork_config(memory: TopicMemory) -> RunnableConfig:
    head = memory.graph.get_state(memory.run_config("t")).config["configurable"]
    config = memory.run_config("t", head["checkpoint_id"])
    config["configurable"]["checkpoint_ns"] = ""
    return config


def _every_checkpoint_checks(memory: TopicMemory) -> int:
    """``check`` on every checkpoint the thread keeps, of every branch; how many there were."""
    checked = 0
    for snapshot in memory.graph.get_state_history(memory.run_config("t")):
        checkpoint_id = snapshot.config["configurable"]["checkpoint_id"]
        report = memory.check("t", checkpoint_id=checkpoint_id)
        assert report.ok, (checkpoint_id, snapshot.metadata, report.findings)
        checked += 1
    return checked


def _chat_on(memory: TopicMemory, checkpoint_id: str, text: str) -> None:
    payload = {"messages": [HumanMessage(text)], "mode": "chat"}
    memory.run_turn("t", payload, checkpoint_id=checkpoint_id)


@pytest.mark.parametrize("edit", ["add", "replace"])
def test_update_state_that_adds_or_replaces_keeps_invariant_1_on_every_checkpoint(
    memory: TopicMemory, edit: str
) -> None:
    values = memory.state("t")
    if edit == "add":
        update = {"messages": [HumanMessage("noted by hand in Studio", id="by-hand")]}
    else:
        victim = values["messages"][-3]
        update = {"messages": [HumanMessage("edited in Studio", id=victim.id)]}
    fork = memory.graph.update_state(_fork_config(memory), update)
    fork_id = fork["configurable"]["checkpoint_id"]
    at_fork = memory.check("t", checkpoint_id=fork_id)
    assert at_fork.ok, at_fork.findings
    if edit == "add":
        assert any("added by update_state" in f and "by-hand" in f for f in at_fork.findings)
    _chat_on(memory, fork_id, "And what about the JR pass?")
    for number in range(3):
        memory.chat("t", f"Tell me more about the sourdough starter ({number})")
    state = memory.state("t")
    held = [m["id"] for m in memory.transcript("t")]
    assert len(held) == len(set(held)) == state["total_messages"]
    if edit == "add":
        assert "by-hand" in held
    assert _every_checkpoint_checks(memory) >= 5


def test_update_state_that_removes_a_message_is_refused_and_writes_nothing(
    memory: TopicMemory,
) -> None:
    history = len(list(memory.graph.get_state_history(memory.run_config("t"))))
    victim = memory.state("t")["messages"][-3].id
    for removal in ([RemoveMessage(id=str(victim))], [{"type": "remove", "id": victim}]):
        with pytest.raises(MessageRemovalError, match=f"cannot remove message '{victim}'"):
            memory.graph.update_state(_fork_config(memory), {"messages": removal})
    assert len(list(memory.graph.get_state_history(memory.run_config("t")))) == history
    assert memory.check("t").ok
    # A graph copy, as a LangGraph server makes one, refuses the same.
    copy = memory.graph.copy()
    with pytest.raises(MessageRemovalError):
        copy.update_state(_fork_config(memory), {"messages": [RemoveMessage(id=str(victim))]})
    # Updates of other keys pass as before.
    memory.graph.update_state(memory.run_config("t"), {"turn": 99}, as_node="bookkeeping")
    assert memory.state("t")["turn"] == 99


def test_an_unknown_checkpoint_is_named_not_reported_as_lost_messages(
    memory: TopicMemory, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(UnknownCheckpointError, match="no such checkpoint 'nope' of thread 't'"):
        memory.check("t", checkpoint_id="nope")
    history = len(list(memory.graph.get_state_history(memory.run_config("t"))))
    with pytest.raises(UnknownCheckpointError):
        _chat_on(memory, "nope", "a fork from nowhere")  # would start a branch from nothing
    assert len(list(memory.graph.get_state_history(memory.run_config("t")))) == history
    data_dir = str(memory.settings.data_dir)
    status = main(["check", "--data-dir", data_dir, "--thread", "t", "--checkpoint", "nope"])
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert status == 2 and len(lines) == 1, (status, lines)
    assert "no such checkpoint 'nope'" in lines[0] and "INVARIANT" not in captured.out


def test_leftovers_of_a_split_a_crash_cut_short_are_not_warned_about_on_every_command(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    records = subject_records(["stocks", "kyoto", "sourdough", "fitness"])
    settings = Settings(data_dir=tmp_path / "d", budget_tokens=900)
    with TopicMemory(settings=settings, embedder=HashEmbedder()) as memory:
        # 28 messages: some wait unsplit; the last 4 make the next split take them.
        memory.import_messages("t", records[:28])
        # What a process killed between a split's topic write and its checkpoint leaves: the
        # records of a split no checkpoint recorded, which the next split writes again.
        values = memory.state("t")
        store = memory.services.branch_stores("t", values).topic_store
        waiting = [m for m in values["messages"] if m.id][:4]
        orphan = store.create_topic("interrupted", "")
        store.append(
            orphan["id"],
            [{"id": m.id or "", "role": "user", "content": str(m.content)} for m in waiting],
        )
        memory.services.forget_stores("t")
        memory.import_messages("t", records[28:])
    for _ in range(2):  # every later process, every command
        with (
            caplog.at_level(logging.WARNING),
            TopicMemory(settings=settings, embedder=HashEmbedder()) as memory,
        ):
            memory.topics("t")
            memory.transcript("t")
            report = memory.check("t")
            memory.chat("t", "Where should I stay in Kyoto?")
        assert report.ok, report.findings
        assert report.counts["other_branches"] > 0  # still reported, as a note
        warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert not [w for w in warned if "stored in both" in w], warned
        caplog.clear()


def test_update_state_reusing_the_id_of_a_split_message_keeps_invariant_1(
    memory: TopicMemory,
) -> None:
    values = memory.state("t")
    working = {m.id for m in values["messages"]}
    split_id = next(m["id"] for m in memory.transcript("t") if m["id"] not in working)
    update = {"messages": [HumanMessage("edited in Studio", id=split_id)]}
    fork = memory.graph.update_state(_fork_config(memory), update)
    fork_id = fork["configurable"]["checkpoint_id"]
    _chat_on(memory, fork_id, "And what about the JR pass?")
    for number in range(3):
        memory.chat("t", f"Tell me more about the sourdough starter ({number})")
    held = [m["id"] for m in memory.transcript("t")]
    assert len(held) == len(set(held)) == memory.state("t")["total_messages"]
    assert _every_checkpoint_checks(memory) >= 5
