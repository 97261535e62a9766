"""The review (seed 000 §4.8, §7, §9): archive by the criteria, merge duplicates, lose nothing.

Runs once per store profile (``conftest.STORE_PROFILE_MODULES``): embedded files and PostgreSQL.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import MemoryFactory
from fakes import with_roles
from review_support import BlockSplitter, block_of, block_records

from langgraph_topics import TopicMemory
from langgraph_topics.cli.main import main
from langgraph_topics.roles.protocols import Roles
from langgraph_topics.state.records import TopicRecord
from langgraph_topics.stores.base_store_topics import BaseStoreTopicStore

THREAD = "t"


def imported(make_memory: MemoryFactory, roles: Roles) -> TopicMemory:
    """A thread of six blocks, ``kyotoA`` and ``kyotoB`` in two topics of one subject."""
    splitter = BlockSplitter()
    memory = make_memory(budget=900, roles=with_roles(roles, splitter=splitter), keep_recent=8)
    splitter.locate = lambda i: memory.services.stores(THREAD).topic_store.locate(i)
    memory.import_messages(THREAD, block_records())
    return memory


def topics_by_block(memory: TopicMemory) -> dict[str, str]:
    """Each block's topic (by the block of the topic's first message)."""
    store = memory.services.stores(THREAD).topic_store
    return {block_of(store.messages(t)[0]["id"]): t for t in store.topic_ids()}


def registry(memory: TopicMemory) -> dict[str, TopicRecord]:
    return dict(memory.state(THREAD)["topics"])


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def stored(memory: TopicMemory) -> object:
    """Everything the thread's topic store holds: its files, or its ``BaseStore`` records."""
    store = memory.services.stores(THREAD).topic_store
    if isinstance(store, BaseStoreTopicStore):
        records = [(r.seq, r.topic, r.record) for r in store.stored_records()]
        return records, store.archive_entries()
    root = Path(memory.settings.data_dir) / "threads"
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("topics/**/*"))
        if p.is_file() and not p.name.endswith(".catalog")
    }


def test_review_on_the_cli_archives_merges_keeps_every_message_and_is_a_no_op_twice(
    make_memory: MemoryFactory, roles: Roles, capsys: pytest.CaptureFixture[str]
) -> None:
    memory = imported(make_memory, roles)
    blocks = topics_by_block(memory)
    assert blocks["kyotoA"] != blocks["kyotoB"]  # the duplicates the review must merge
    split_ids = set(memory.services.stores(THREAD).topic_store.message_ids())
    data = ["--thread", THREAD, "--data-dir", str(memory.settings.data_dir)]

    code, out, err = cli(capsys, "review", "--now", "2030-01-01", "--json", *data)
    assert code == 0, err
    report = json.loads(out)
    assert [(m["into"], m["retired"]) for m in report["merged"]] == [
        (blocks["kyotoA"], blocks["kyotoB"])
    ]
    assert report["merged"][0]["similarity"] >= memory.settings.merge_similarity
    assert {"kyoto", "gion"} <= set(report["merged"][0]["shared_keywords"])
    remaining = {t for b, t in blocks.items() if b != "kyotoB"}
    assert {a["topic_id"] for a in report["archived"]} == remaining  # all dormant in 2030
    assert all(a["reason"].startswith("dormant") for a in report["archived"])

    assert cli(capsys, "check", *data)[0] == 0
    code, out, _ = cli(capsys, "transcript", "--json", *data)
    ids = [json.loads(line)["id"] for line in out.splitlines()]
    assert sorted(ids) == sorted(r["id"] for r in block_records())  # every message, once
    fresh = TopicMemory(data_dir=memory.settings.data_dir)  # what the next process sees
    try:
        store = fresh.services.stores(THREAD).topic_store
        assert set(store.message_ids()) == split_ids
        kyoto = store.messages(blocks["kyotoA"])
        assert {block_of(m["id"]) for m in kyoto} == {"kyotoA", "kyotoB"}  # both histories
        assert [m["timestamp"] for m in kyoto] == sorted(m["timestamp"] for m in kyoto)
        states = {t["id"]: t["status"] for t in fresh.topics(THREAD)}
        assert states == dict.fromkeys(remaining, "archived")
        months = {e["topic_id"]: e["month"] for e in fresh.archived(THREAD)}
        assert months[blocks["kyotoA"]] == "2024-03" and months[blocks["stocks"]] == "2024-02"
        before = stored(fresh)
    finally:
        fresh.close()

    code, out, _ = cli(capsys, "review", "--now", "2030-01-01", *data)
    assert code == 0 and "nothing to do" in out
    code, out, _ = cli(capsys, "review", "--now", "2030-01-01", "--json", *data)
    again = json.loads(out)
    assert again["merged"] == [] and again["archived"] == [] and again["rebriefed"] == []
    again_memory = TopicMemory(data_dir=memory.settings.data_dir)
    try:
        assert stored(again_memory) == before  # not one byte written by the second review
        # An archived topic comes back when a recall cue names it.
        again_memory.chat(THREAD, "Do you remember what we said about my sourdough starter?")
        state = again_memory.state(THREAD)
        sourdough = blocks["sourdough"]
        assert state["topics"][sourdough]["status"] == "active"
        activated = [e for e in state["events"] if e["kind"] == "activated"]
        assert activated and activated[0]["reason"] == "recall_cue"
        assert sourdough in activated[0]["topic_ids"]
        assert sourdough in state["context"]["topic_ids"]
        assert state["topics"][blocks["stocks"]]["status"] == "archived"  # not named: stays
        assert again_memory.check(THREAD).ok
    finally:
        again_memory.close()


def test_the_criteria_archive_only_topics_dormant_past_the_threshold(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    memory = imported(make_memory, roles)
    blocks = topics_by_block(memory)
    before = memory.state(THREAD)
    record = memory.review(THREAD, now="2024-06-14")
    after = registry(memory)
    archived = {a["topic_id"] for a in record["archived"]}
    assert {blocks["kyotoA"], blocks["stocks"], blocks["sourdough"]} <= archived
    for topic_id, topic in after.items():
        last = topic["last_active_at"][:10]
        assert (topic_id in archived) == (last < "2024-06-07"), (topic_id, last)
    assert blocks["kyotoB"] not in after  # merged into kyotoA, then archived with it
    assert memory.check(THREAD).ok
    # The branch before the review still sees both Kyoto topics, and holds invariant 1.
    old = before["topics"]
    assert blocks["kyotoB"] in old and old[blocks["kyotoA"]]["status"] == "active"
    history = list(memory.graph.get_state_history(memory.run_config(THREAD)))
    earlier = next(s for s in history if s.values.get("topics") == old)
    checkpoint_id = earlier.config["configurable"]["checkpoint_id"]
    assert memory.check(THREAD, checkpoint_id=checkpoint_id).ok


def test_archive_and_restore_by_request(make_memory: MemoryFactory, roles: Roles) -> None:
    memory = imported(make_memory, roles)
    stocks = topics_by_block(memory)["stocks"]
    assert memory.archive(THREAD, stocks) == "archived"
    assert memory.archive(THREAD, stocks) == "archived"  # again: nothing changes
    assert [e["topic_id"] for e in memory.archived(THREAD)] == [stocks]
    assert memory.archived(THREAD, month="2024-02")[0]["reason"] == "by request"
    assert memory.archived(THREAD, month="2023") == []
    # Normal activation does not offer it: a question on its subject without a recall cue.
    memory.chat(THREAD, "市盈率和市净率分别适合评估什么类型的公司？")
    assert registry(memory)[stocks]["status"] == "archived"
    assert memory.restore(THREAD, stocks) == "dormant"
    assert memory.archived(THREAD) == []
    store = memory.services.stores(THREAD).topic_store
    assert store.archive_entry(stocks) is None  # type: ignore[attr-defined]
    archived_now = [a["topic_id"] for a in memory.review(THREAD)["archived"]]
    assert archived_now and stocks not in archived_now  # restored today: not dormant yet
    assert memory.check(THREAD).ok


def test_bad_ids_times_and_threads_are_one_line_and_write_nothing(
    make_memory: MemoryFactory,
    roles: Roles,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    store_profile: str,
) -> None:
    memory = imported(make_memory, roles)
    blocks = topics_by_block(memory)
    data = ["--thread", THREAD, "--data-dir", str(memory.settings.data_dir)]
    state = memory.state(THREAD)

    def refused(*args: str) -> str:
        code, out, err = cli(capsys, *args)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (code, err)
        return err

    assert "topic-nope" in refused("archive", "topic-nope", *data)
    assert "topic-nope" in refused("restore", "topic-nope", *data)
    assert "--now 'yesterday'" in refused("review", "--now", "yesterday", *data)
    assert "no thread 'other'" in refused(
        "review", "--thread", "other", "--data-dir", str(memory.settings.data_dir)
    )
    if store_profile == "embedded":  # the database profile keeps no thread in the directory
        missing = tmp_path / "nowhere"
        assert "no such data directory" in refused("review", "--data-dir", str(missing))
        assert not missing.exists()
    assert memory.state(THREAD) == state  # nothing was written
    memory.review(THREAD, now="2030-01-01")
    assert "merged into" in refused("archive", blocks["kyotoB"], *data)
    with pytest.raises(ValueError, match="no topic"):
        memory.restore(THREAD, "topic-nope")


def test_pinned_topics_stay_and_a_merge_keeps_both_topics_use(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    memory = imported(make_memory, roles)
    blocks = topics_by_block(memory)
    memory.pin(THREAD, blocks["stocks"])
    memory.rate(THREAD, blocks["kyotoB"], 4)
    record = memory.review(THREAD, now="2030-01-01")
    archived = {a["topic_id"] for a in record["archived"]}
    assert blocks["sourdough"] in archived  # idle for years: archived as before
    assert blocks["stocks"] not in archived  # pinned: the default guard keeps it
    after = registry(memory)
    assert after[blocks["stocks"]]["status"] != "archived"
    assert blocks["kyotoB"] not in after  # merged into kyotoA ...
    assert after[blocks["kyotoA"]].get("usage", {}).get("rating") == 4  # ... with its rating
    assert memory.check(THREAD).ok


def test_a_date_query_brings_back_the_archived_topics_of_its_period(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    # Seed 000 §4.8: archived topics come back only when asked for, and a date query asks.
    memory = imported(make_memory, roles)
    blocks = topics_by_block(memory)
    memory.review(THREAD, now="2030-01-01")
    assert all(t["status"] == "archived" for t in registry(memory).values())
    # A message that holds a date but asks for nothing wakes nothing.
    memory.chat(THREAD, "My flight is on February 12, 2024, can you note that?")
    assert all(t["status"] == "archived" for t in registry(memory).values())

    memory.chat(THREAD, "What did we talk about in February 2024?")
    state = memory.state(THREAD)
    stocks = blocks["stocks"]
    assert state["topics"][stocks]["status"] == "active"
    assert stocks in state["context"]["topic_ids"]  # back in the window this turn
    queried = [e for e in state["events"] if e["kind"] == "date_query"]
    assert queried and "2024-02-01..2024-02-29" in queried[0]["detail"]
    activated = [e for e in state["events"] if e["kind"] == "activated"]
    assert activated and activated[0]["reason"] == "date_query"
    # The Kyoto topic (January, merged with its March return) spans February too; the
    # April's sourdough topic stays archived until asked for.
    woken = {b for b, t in blocks.items() if state["topics"].get(t, {}).get("status") == "active"}
    assert woken == {"stocks", "kyotoA"}
    assert state["topics"][blocks["sourdough"]]["status"] == "archived"

    memory.chat(THREAD, "还记得2024年4月我们聊了什么吗？")
    assert registry(memory)[blocks["sourdough"]]["status"] == "active"
    assert memory.check(THREAD).ok


class _SilentRouter:
    """An index router that ranks no candidate (a model that answered with nothing)."""

    def route(self, query: str, candidates: object, *, deep: bool) -> list[object]:
        return []


def test_the_date_chooses_the_topics_of_its_period_whatever_the_router_says(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    memory = imported(make_memory, with_roles(roles, index_router=_SilentRouter()))
    blocks = topics_by_block(memory)
    memory.review(THREAD, now="2030-01-01")
    memory.chat(THREAD, "我们2024年2月聊了什么？")
    state = memory.state(THREAD)
    assert state["topics"][blocks["stocks"]]["status"] == "active"
    activated = [e for e in state["events"] if e["kind"] == "activated"]
    assert "in the asked period" in activated[0]["detail"]
    assert memory.check(THREAD).ok
