"""Memory scores and tiers (seed 004 §2): the formula, the counters, the user signals."""

from __future__ import annotations

import json
import math
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import MemoryFactory
from conversations import SUBJECTS, subject_records
from fakes import ActivatingResponder, with_roles

from langgraph_topics import TopicMemory
from langgraph_topics.cli.main import main
from langgraph_topics.errors import InputError, ThreadBusyError
from langgraph_topics.roles.protocols import Roles
from langgraph_topics.scoring import (
    TIERS,
    WEIGHTS,
    check_rating,
    memory_score,
    score_topics,
    tier_of,
    turn_counts,
    with_counts,
)
from langgraph_topics.state.records import TopicRecord, TurnEvent

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _record(**extra: object) -> TopicRecord:
    record: TopicRecord = {
        "id": "t1",
        "name": "Kyoto trip",
        "status": "active",
        "parent_id": None,
        "scores": [0.5],
        "created_at": "2026-01-01T00:00:00+00:00",
        "last_active_at": NOW.isoformat(),
        "message_count": 12,
    }
    return {**record, **extra}  # type: ignore[typeddict-item]


def test_the_score_is_seed_004s_weighted_sum() -> None:
    usage = {"recalled": 3, "searched": 7, "referenced": 4, "updated": 2, "rating": 4}
    record = _record(usage={**usage, "pinned": True}, message_count=4)
    scored = memory_score(record, NOW + timedelta(days=45))
    expected = (
        math.log1p(3) * 0.25
        + math.log1p(7) * 0.10
        + 4 / 5 * 0.20
        + 0.30
        + 1.0 * 0.10  # a live topic's folder
        + 4 / 8 * 0.15  # half a discussion
        + math.exp(-45 / 90) * 0.10
        + math.log1p(2) * 0.05
        + math.log1p(4) * 0.05
    )
    assert scored.score == pytest.approx(expected, abs=1e-5)
    assert sum(scored.parts.values()) == pytest.approx(scored.score, abs=1e-5)
    assert set(scored.parts) == set(WEIGHTS) and scored.tier == "core"


@pytest.mark.parametrize(
    ("score", "tier"),
    [(0.95, "core"), (0.9, "essence"), (0.5, "essence"), (0.49, "memory-only")]
    + [(0.15, "memory-only"), (0.149, "archive"), (0.0, "archive")],
)
def test_tiers_have_the_seeds_bounds(score: float, tier: str) -> None:
    assert tier_of(score) == tier
    assert tier in TIERS


def test_recency_decays_with_the_days_since_the_topic_was_active() -> None:
    fresh = memory_score(_record(), NOW).parts["recency"]
    aged = memory_score(_record(), NOW + timedelta(days=90)).parts["recency"]
    slower = memory_score(_record(), NOW + timedelta(days=90), decay_days=180).parts["recency"]
    assert fresh == pytest.approx(0.10)
    assert aged == pytest.approx(0.10 * math.exp(-1), abs=1e-6)
    assert slower == pytest.approx(0.10 * math.exp(-0.5), abs=1e-6)


def test_an_old_one_off_question_is_archive_tier_and_a_discussion_is_not() -> None:
    later = NOW + timedelta(days=365)
    one_off = _record(status="dormant", message_count=2)
    discussion = _record(status="dormant", message_count=20)
    assert memory_score(one_off, NOW).tier == "memory-only"  # fresh: not yet
    assert memory_score(one_off, later).tier == "archive"
    assert memory_score(discussion, later).tier == "memory-only"
    assert memory_score(_record(usage={"pinned": True}), NOW).tier == "essence"


def test_a_turns_counters_come_from_its_events_and_its_window() -> None:
    events: list[TurnEvent] = [
        {"kind": "split", "topic_ids": ["a"], "detail": ""},
        {"kind": "activated", "reason": "split", "topic_ids": ["a"], "detail": ""},
        {"kind": "index_search", "reason": "recall_cue", "topic_ids": ["b", "c"], "detail": ""},
        {"kind": "activated", "reason": "recall_cue", "topic_ids": ["b"], "detail": ""},
    ]
    result = {"topic_id": "b", "referenced_message_ids": ["m1"]}
    unquoted = {"topic_id": "a", "referenced_message_ids": []}
    context = {"topic_ids": ["b", "a"]}
    counts = turn_counts(events, {"a": unquoted, "b": result}, context)  # type: ignore[arg-type]
    assert counts == {
        "a": {"updated": 1},
        "b": {"searched": 1, "recalled": 1, "referenced": 1},
        "c": {"searched": 1},
    }


def test_counters_stay_sparse_in_the_checkpoint() -> None:
    record = _record()
    assert with_counts(record, {}) is record and "usage" not in with_counts(record, {"searched": 0})
    twice = with_counts(with_counts(record, {"searched": 1}), {"searched": 2, "recalled": 1})
    assert twice["usage"] == {"searched": 3, "recalled": 1}
    assert "usage" not in record  # records are never changed in place
    # A topic with nothing to count this turn is the same record (no copy per topic a turn).
    assert with_counts(twice, {}) is twice and with_counts(twice, {"searched": 0}) is twice


@pytest.mark.parametrize("bad", [6, -1, "x", "2.5", True, None, ""])
def test_a_bad_rating_is_one_line_naming_it(bad: object) -> None:
    with pytest.raises(InputError) as error:
        check_rating(bad)
    assert "rating" in str(error.value) and "\n" not in str(error.value)


def _imported(
    make_memory: MemoryFactory, roles: Roles | None = None, **settings: object
) -> TopicMemory:
    memory = make_memory(budget=900, roles=roles, **settings)
    memory.import_messages("t", subject_records(["stocks", "kyoto", "sourdough", "fitness"]))
    assert memory.topics("t")
    return memory


def _checkpoints(memory: TopicMemory) -> int:
    return len(list(memory.checkpointer.list(memory.run_config("t"))))


def test_pin_unpin_and_rate_change_the_score_and_show_in_topics(
    make_memory: MemoryFactory,
) -> None:
    memory = _imported(make_memory)
    topic = memory.topics("t")[0]
    before = topic["memory_score"]
    assert topic["tier"] in TIERS and topic["usage"] == {}

    pinned = memory.pin("t", topic["id"])
    assert pinned.score == pytest.approx(before + 0.30, abs=1e-5)
    shown = next(t for t in memory.topics("t") if t["id"] == topic["id"])
    assert shown["usage"] == {"pinned": True} and shown["tier"] == pinned.tier

    rated = memory.rate("t", topic["id"], 5)
    assert rated.score == pytest.approx(before + 0.50, abs=1e-5) and rated.tier == "essence"
    assert memory.unpin("t", topic["id"]).score == pytest.approx(before + 0.20, abs=1e-5)
    assert memory.rate("t", topic["id"], 0).score == pytest.approx(before, abs=1e-5)
    assert "usage" not in memory.state("t")["topics"][topic["id"]]  # nothing left behind

    # The signal is in the registry, so a later turn keeps it, split or not.
    memory.pin("t", topic["id"])
    memory.chat("t", "Back to the P/E ratios: what is a fair one for a bank?")
    memory.chat("t", "And the ryokan near Gion, how early should I book?")
    assert memory.state("t")["topics"][topic["id"]]["usage"]["pinned"] is True
    assert memory.check("t").ok


def test_a_bad_signal_writes_nothing(make_memory: MemoryFactory) -> None:
    memory = _imported(make_memory)
    topic_id = memory.topics("t")[0]["id"]
    count = _checkpoints(memory)
    with pytest.raises(InputError, match="has no topic 'topic-nope'"):
        memory.pin("t", "topic-nope")
    with pytest.raises(InputError, match="rating 9"):
        memory.rate("t", topic_id, 9)
    with pytest.raises(InputError, match="has no topic"):
        memory.rate("other-thread", topic_id, 3)
    assert _checkpoints(memory) == count


def test_a_signal_waits_for_the_threads_writer(make_memory: MemoryFactory) -> None:
    memory = _imported(make_memory, lock_timeout_seconds=0.2)
    topic_id = memory.topics("t")[0]["id"]
    held, release = threading.Event(), threading.Event()

    def writer() -> None:
        with memory.writing("t"):
            held.set()
            release.wait(10)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        held.wait(10)
        started = time.perf_counter()
        with pytest.raises(ThreadBusyError):
            memory.pin("t", topic_id)
        assert time.perf_counter() - started >= 0.15
    finally:
        release.set()
        thread.join()
    assert memory.pin("t", topic_id).score > 0  # free again


def test_a_recall_turn_counts_the_search_and_the_recall(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    memory = _imported(make_memory, roles)
    topics = {i: {**r, "status": "dormant"} for i, r in memory.state("t")["topics"].items()}
    index = memory.services.stores("t").topic_index
    for topic_id in topics:
        index.set_status(topic_id, "dormant")
    memory.graph.update_state(memory.run_config("t"), {"topics": topics}, as_node="bookkeeping")

    # The stock-market subject is split by now (the later subjects may still be unsplit).
    memory.chat("t", "You forgot? I told you before about 财务指标 like 市盈率 and 市净率")

    state = memory.state("t")
    search = next(e for e in state["events"] if e["kind"] == "index_search")
    woken = next(
        e for e in state["events"] if e["kind"] == "activated" and e["reason"] == "recall_cue"
    )["topic_ids"]
    for topic_id in search["topic_ids"]:
        assert state["topics"][topic_id]["usage"]["searched"] == 1
    for topic_id in woken:
        assert state["topics"][topic_id]["usage"]["recalled"] == 1
    quoted = [
        t
        for t in state["context"]["topic_ids"]
        if state["topic_results"][t]["referenced_message_ids"]
    ]
    for topic_id in quoted:
        assert state["topics"][topic_id]["usage"]["referenced"] == 1


def test_archive_tier_topics_wait_for_a_recall_cue(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    # The conversation is from 2024; a turn in 2026 finds its one-off topics in the archive tier.
    responder = ActivatingResponder(query="蛋白质一天要吃多少克才够")
    memory = _imported(make_memory, with_roles(roles, responder=responder))
    records = memory.state("t")["topics"]
    index = memory.services.stores("t").topic_index
    for topic_id in records:
        index.set_status(topic_id, "dormant")
    dormant = {i: {**r, "status": "dormant"} for i, r in records.items()}
    memory.graph.update_state(memory.run_config("t"), {"topics": dormant}, as_node="bookkeeping")
    now = memory.services.clock()
    scored = score_topics(dormant, now)  # type: ignore[arg-type]
    archive = {topic_id for topic_id, score in scored.items() if score.tier == "archive"}
    assert archive, "the 2024 conversation has old one-off topics"

    memory.chat("t", "How much protein should I eat per day?")
    searches = [e for e in memory.state("t")["events"] if e["kind"] == "index_search"]
    assert searches and all("deep" not in e["detail"] for e in searches)
    offered = {t for e in searches for t in e["topic_ids"]}
    assert offered and not offered & archive

    memory.chat("t", "你忘了吗？我之前说过 蛋白质一天要吃多少克才够")
    deep = [e for e in memory.state("t")["events"] if e["kind"] == "index_search"]
    assert any("deep" in e["detail"] for e in deep)
    assert {t for e in deep for t in e["topic_ids"]} & archive


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(args)
    out = capsys.readouterr()
    return status, out.out, out.err


def test_cli_pin_unpin_rate_and_topics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    source = tmp_path / "chat.jsonl"
    records = subject_records(["stocks", "kyoto", "sourdough", "fitness"])
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    common = ["--data-dir", str(data), "--thread", "bob"]
    assert _cli(["import", str(source), *common, "--budget", "900"], capsys)[0] == 0
    status, out, _ = _cli(["topics", *common, "--json"], capsys)
    topics = json.loads(out)
    topic_id = topics[0]["id"]
    assert {"memory_score", "tier", "usage"} <= set(topics[0])

    status, out, err = _cli(["pin", *common, topic_id], capsys)
    assert status == 0 and out.startswith(f"pinned {topic_id}: memory score ") and not err
    status, out, _ = _cli(["rate", *common, topic_id, "4"], capsys)
    assert status == 0 and out.startswith(f"rated 4 {topic_id}")
    status, out, _ = _cli(["topics", *common], capsys)
    header, _, *rows = out.splitlines()
    assert header.split() == [
        "id",
        "status",
        "messages",
        "last",
        "score",
        "memory",
        "tier",
        "links",
        "name",
    ]
    row = next(r for r in rows if r.startswith(topic_id))
    assert "(pinned)" in row
    assert _cli(["unpin", *common, topic_id], capsys)[0] == 0
    assert json.loads(_cli(["topics", *common, "--json"], capsys)[1])[0]["usage"] == {"rating": 4}

    for bad in (["pin", *common, "topic-nope"], ["rate", *common, topic_id, "7"]):
        status, out, err = _cli(bad, capsys)
        assert status == 2 and not out
        assert len(err.strip().splitlines()) == 1 and ("topic-nope" in err or "rating 7" in err)
    status, _, err = _cli(["pin", "--data-dir", str(tmp_path / "nowhere"), topic_id], capsys)
    assert status == 2 and "no such data directory" in err
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("command", ["pin", "unpin", "rate"])
def test_signal_commands_show_their_examples(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from langgraph_topics.cli.help_texts import EXAMPLES

    with pytest.raises(SystemExit) as stopped:
        main([command, "--help"])
    out = capsys.readouterr().out
    assert stopped.value.code == 0 and f"usage: langgraph-topics {command}" in out
    assert EXAMPLES[f"langgraph-topics {command}"].strip("\n") in out


def test_a_split_into_a_pinned_topic_keeps_its_signals(make_memory: MemoryFactory) -> None:
    memory = _imported(make_memory)
    for topic in memory.topics("t"):
        memory.pin("t", topic["id"])
        memory.rate("t", topic["id"], 3)
    existing = set(memory.state("t")["topics"])
    touched: set[str] = set()
    lines = [q for subject in ("kyoto", "stocks") for q, _ in SUBJECTS[subject]] * 3
    for line in lines:
        memory.chat("t", line)
        state = memory.state("t")
        splits = [e for e in state["events"] if e["kind"] == "split"]
        touched |= {t for e in splits for t in e["topic_ids"]} & existing
        if touched:
            break
    assert touched, "a split added messages to an existing topic"
    for topic_id in touched:
        usage = state["topics"][topic_id]["usage"]
        assert usage["pinned"] is True and usage["rating"] == 3
        assert usage["updated"] >= 1  # and the split was counted


@pytest.mark.parametrize("store_profile", ["postgres"], indirect=True)
def test_signals_on_the_postgres_profile(make_memory: MemoryFactory) -> None:
    memory = _imported(make_memory)
    topic_id = memory.topics("t")[0]["id"]
    assert memory.pin("t", topic_id).parts["pinned"] == pytest.approx(0.30)
    assert memory.rate("t", topic_id, 2).parts["rating"] == pytest.approx(0.08)
    shown = next(t for t in memory.topics("t") if t["id"] == topic_id)
    assert shown["usage"] == {"pinned": True, "rating": 2}
    with pytest.raises(InputError, match="has no topic"):
        memory.unpin("t", "topic-nope")
    assert memory.check("t").ok
