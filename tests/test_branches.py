"""The topic store follows the checkpoint: forks and time travel see their own topics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import MemoryFactory
from conversations import subject_records
from langchain_core.messages import HumanMessage

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.errors import InputError
from langgraph_topics.retrieval.message_index import SUPERSEDED_GROUP, MessageIndex
from langgraph_topics.services import thread_directory
from langgraph_topics.stores.seq_ranges import contains, normalize, with_range
from langgraph_topics.stores.topic_store import JsonlTopicStore


def _head(memory: TopicMemory, thread: str) -> str:
    config = memory.graph.get_state(memory.run_config(thread)).config
    return str(config["configurable"]["checkpoint_id"])


def _ask(memory: TopicMemory, thread: str, text: str, checkpoint_id: str | None = None) -> None:
    memory.run_turn(
        thread, {"messages": [HumanMessage(text)], "mode": "chat"}, checkpoint_id=checkpoint_id
    )


def test_ranges_merge_and_answer_membership() -> None:
    ranges = normalize([[5, 9], [0, 3], [3, 4], [9, 9]])
    assert ranges == [(0, 4), (5, 9)]
    assert with_range(ranges, 4, 5) == [(0, 9)]
    assert [contains(ranges, n) for n in (0, 3, 4, 5, 8, 9)] == [True] * 2 + [False] + [
        True
    ] * 2 + [False]
    with pytest.raises(ValueError, match="ends before"):
        normalize([[3, 1]])


def test_a_fork_sees_only_its_own_topics_and_both_branches_check(
    make_memory: MemoryFactory,
) -> None:
    memory = make_memory(budget=900)
    records = subject_records(["stocks", "kyoto", "sourdough", "fitness"])
    half = len(records) // 2
    memory.import_messages("t", records[:half])
    fork_point = _head(memory, "t")
    at_fork = {m["id"] for m in memory.transcript("t")}
    memory.import_messages("t", records[half:])
    old_head = _head(memory, "t")
    assert memory.check("t").ok
    later = {r["id"] for r in records[half:]}
    assert later <= {m["id"] for m in memory.transcript("t")}

    _ask(memory, "t", "Which ryokan did we like near Fushimi Inari?", checkpoint_id=fork_point)
    _ask(memory, "t", "And what about the sourdough starter?")

    new_branch = memory.check("t")
    assert new_branch.ok, new_branch.findings
    # The abandoned branch's splits stay on disk, unseen.
    assert new_branch.counts["other_branches"] + new_branch.counts["in_flight"] > 0
    transcript = [m["id"] for m in memory.transcript("t")]
    assert len(transcript) == len(set(transcript)) == memory.state("t")["total_messages"]
    assert at_fork <= set(transcript)
    assert not later & set(transcript), "the abandoned branch's messages leaked into the fork"
    window = memory.context("t", "Tell me about the gym routine and my squat")["context"]
    assert not later & set(window["message_ids"])
    for topic in memory.topics("t"):
        assert topic["status"] != "unregistered", topic

    old_branch = memory.check("t", checkpoint_id=old_head)
    assert old_branch.ok, old_branch.findings


def test_time_travel_back_to_the_old_branch_continues_it(make_memory: MemoryFactory) -> None:
    memory = make_memory(budget=900)
    records = subject_records(["stocks", "kyoto", "sourdough"])
    memory.import_messages("t", records[:20])
    fork_point = _head(memory, "t")
    memory.import_messages("t", records[20:])
    old_head = _head(memory, "t")
    _ask(memory, "t", "A question on the fork", checkpoint_id=fork_point)
    _ask(memory, "t", "Back on the old branch: what about the stocks?", checkpoint_id=old_head)
    for _ in range(3):
        _ask(memory, "t", "One more question about bread and stocks to push a split")
    report = memory.check("t")
    assert report.ok, report.findings
    ids = {m["id"] for m in memory.transcript("t")}
    assert {r["id"] for r in records} <= ids


def test_a_crash_after_the_split_wrote_but_before_its_checkpoint_loses_nothing(
    make_memory: MemoryFactory,
) -> None:
    memory = make_memory(budget=900)
    records = subject_records(["stocks", "kyoto", "sourdough", "fitness"])
    memory.import_messages("t", records[:30])
    # What a process killed between the topic write and the checkpoint leaves behind: the
    # records of a split no checkpoint recorded (simulated by appending them directly).
    values = memory.state("t")
    store = memory.services.branch_stores("t", values).topic_store
    waiting = [m for m in values["messages"] if m.id][:4]
    orphan = store.create_topic("interrupted", "")
    store.append(
        orphan["id"],
        [{"id": m.id or "", "role": "user", "content": str(m.content)} for m in waiting],
    )
    memory.services.forget_stores("t")

    report = memory.check("t")
    assert report.ok, report.findings
    assert report.counts["in_flight"] == len(waiting)
    memory.import_messages("t", records[30:])
    after = memory.check("t")
    assert after.ok, after.findings
    ids = [m["id"] for m in memory.transcript("t")]
    assert len(ids) == len(set(ids)) == len(records)
    assert all(t["id"] != orphan["id"] for t in memory.topics("t"))


def test_check_names_a_duplicated_id_with_its_files_and_a_damaged_line(
    make_memory: MemoryFactory,
) -> None:
    memory = make_memory(budget=500)
    memory.import_messages("t", subject_records(["stocks", "kyoto", "sourdough", "fitness"]))
    root = thread_directory(Path(memory.settings.data_dir), "t")
    files = sorted((root / "topics").glob("*.jsonl"))
    assert len(files) >= 2
    first = files[0].read_text("utf-8").splitlines()
    message_line = next(line for line in first if '"type": "message"' in line)
    with files[1].open("a", encoding="utf-8") as handle:
        handle.write(message_line + "\n")
        handle.write('{"type": "message", "id": "m999", "content": \n')
    memory.services.forget_stores("t")
    report = memory.check("t")
    assert not report.ok
    text = "\n".join(report.findings)
    duplicated = next(f for f in report.findings if "stored 2 times" in f)
    assert f"topics/{files[0].name}:" in duplicated and f"topics/{files[1].name}:" in duplicated
    assert "'m999'" in text and f"topics/{files[1].name}:" in text


def test_check_refuses_a_thread_that_does_not_exist_and_creates_nothing(
    make_memory: MemoryFactory,
) -> None:
    memory = make_memory()
    with pytest.raises(InputError, match="no thread 'nobody'"):
        memory.check("nobody")
    assert not thread_directory(Path(memory.settings.data_dir), "nobody").exists()


def test_a_store_opened_on_a_branch_numbers_new_records_after_every_other_branch(
    tmp_path: Path,
) -> None:
    full = JsonlTopicStore(tmp_path)
    topic = full.create_topic("a", "")
    full.append(topic["id"], [{"id": "x", "role": "user", "content": "x"}])
    fork_ranges = full.visible_ranges()
    full.append(topic["id"], [{"id": "y", "role": "user", "content": "y"}])
    fork = full.on_branch(fork_ranges)
    assert fork.message_ids() == {"x": topic["id"]}
    fork.append(topic["id"], [{"id": "y", "role": "user", "content": "y again"}])
    reopened: dict[str, Any] = {
        "old": JsonlTopicStore(tmp_path, visible=full.visible_ranges()),
        "fork": JsonlTopicStore(tmp_path, visible=fork.visible_ranges()),
    }
    assert reopened["old"].messages(topic["id"])[-1]["content"] == "y"
    assert reopened["fork"].messages(topic["id"])[-1]["content"] == "y again"
    assert len(reopened["fork"].messages(topic["id"])) == 2


def test_a_context_run_through_the_checkpointed_graph_leaves_the_thread_unchanged(
    make_memory: MemoryFactory,
) -> None:
    memory = make_memory(budget=500)
    memory.import_messages("t", subject_records(["stocks", "kyoto", "sourdough"]))
    root = thread_directory(Path(memory.settings.data_dir), "t")
    files_before = {p.name: p.read_bytes() for p in sorted((root / "topics").glob("*.jsonl"))}
    kept = ("messages", "topics", "total_messages", "last_seen_id", "turn", "store_ranges")
    before = {key: memory.state("t").get(key) for key in kept}

    # What Studio or the SDK sends: the server's own graph, input mode "context".
    result = memory.run_turn(
        "t", {"messages": [HumanMessage("Which ryokan near Fushimi Inari?")], "mode": "context"}
    )

    assert result["context"]["messages"][-1]["content"].startswith("Which ryokan")
    after = memory.state("t")
    assert {key: after.get(key) for key in kept} == before
    files_after = {p.name: p.read_bytes() for p in sorted((root / "topics").glob("*.jsonl"))}
    assert files_after == files_before
    assert memory.check("t").ok
    memory.chat("t", "Thanks, and the sourdough hydration?")
    assert memory.check("t").ok


def test_a_message_indexed_again_under_another_topic_counts_for_the_new_one(
    tmp_path: Path,
) -> None:
    index = MessageIndex(tmp_path, HashEmbedder())
    message: Any = {"id": "m1", "role": "user", "content": "sourdough starter"}
    index.add([message], ["topic-a"])
    index.add([message], ["topic-a"])  # same topic: nothing new
    index.add([message], ["topic-b"])
    for view in (index, MessageIndex(tmp_path, HashEmbedder())):
        snapshot = view.snapshot()
        assert snapshot.count == 2
        names = [snapshot.topic_names[c] for c in snapshot.codes]
        assert names == [SUPERSEDED_GROUP, "topic-b"]
        assert view.position["m1"] == 1


def test_the_cli_check_refuses_a_mistyped_data_dir_or_thread_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from langgraph_topics.cli.main import main

    missing = tmp_path / "typo"
    assert main(["check", "--data-dir", str(missing)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such data directory" in err[0]
    assert not missing.exists()

    data_dir = tmp_path / "d"
    data_dir.mkdir()
    assert main(["check", "--data-dir", str(data_dir), "--thread", "nobody"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no thread 'nobody'" in err[0]
    assert not (data_dir / "threads").exists() or not any((data_dir / "threads").iterdir())


def test_a_checkpoint_whose_topics_are_in_another_data_dir_degrades_instead_of_crashing(
    make_memory: MemoryFactory,
) -> None:
    from langgraph_topics.services import TopicContext

    memory = make_memory(budget=500)
    memory.import_messages("t", subject_records(["stocks", "kyoto", "sourdough", "fitness"]))
    assert memory.topics("t")
    elsewhere = make_memory(budget=500)  # the README's pitfall: a run without its own context
    result = memory.graph.invoke(
        {"messages": [HumanMessage("Which ryokan near Fushimi Inari?")]},
        memory.run_config("t"),
        context=TopicContext(services=elsewhere.services),
    )
    assert result["messages"][-1].type == "ai"
    assert any("unknown topic" in e["detail"] for e in result["events"])


def test_a_dormant_topic_whose_file_is_gone_is_not_activated_and_the_turn_goes_on(
    make_memory: MemoryFactory,
) -> None:
    memory = make_memory(budget=500)
    memory.import_messages("t", subject_records(["stocks", "kyoto", "sourdough", "fitness"]))
    topics = memory.state("t")["topics"]
    assert topics
    # Every topic dormant, so that a recall cue searches them all; then one file goes away.
    dormant = {i: {**record, "status": "dormant"} for i, record in topics.items()}
    memory.graph.update_state(memory.run_config("t"), {"topics": dormant}, as_node="bookkeeping")
    stores = memory.services.stores("t")
    gone = next(iter(dormant))
    for path in stores.topic_store.root.glob(f"topics/{gone}.*"):  # type: ignore[attr-defined]
        path.unlink()
    data_dir = memory.settings.data_dir
    memory.close()

    name = dormant[gone]["name"]
    with TopicMemory(settings=Settings(data_dir=data_dir, budget_tokens=500)) as reopened:
        result = reopened.run_turn(
            "t",
            {"messages": [HumanMessage(f"You forgot what we said about {name}?")], "mode": "chat"},
        )
    assert result["messages"][-1].type == "ai"
    assert gone not in {i for i, t in result["topics"].items() if t["status"] == "active"}
    assert any(gone in e.get("topic_ids", []) for e in result["events"])
