"""Migrating an embedded data directory to the postgres profile (``langgraph-topics migrate``).

The source is LoCoMo conv-26 (419 messages) imported at a small budget, so it splits into many
topics over 100 checkpoints, plus a few chat turns and a second, short thread.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import DATA
from conversations import subject_records

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.cli.main import main
from langgraph_topics.datasets import load_locomo
from langgraph_topics.errors import InputError
from langgraph_topics.migration import (
    MigrationTarget,
    ThreadConflict,
    list_threads,
    migrate_data_dir,
    open_memories,
)
from langgraph_topics.migration.topic_briefs import read_source_index
from langgraph_topics.migration.verify import window_ids
from langgraph_topics.roles.native import native_roles
from langgraph_topics.services import index_collection_name
from langgraph_topics.stores.embeddings import CachingEmbedder, UseEmbedder
from langgraph_topics.stores.topic_index import server_client
from langgraph_topics.tokens import default_token_counter

BUDGET = 1500
LOCOMO = "conv-26"
SHORT = "short"
CHATS = [
    "What did Caroline say about the adoption agencies?",
    "Remind me what Melanie painted last year",
    "What about the LGBTQ support group?",
]


@pytest.fixture(scope="module")
def source_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An embedded data directory: conv-26 imported and chatted on, and a short thread."""
    data_dir = tmp_path_factory.mktemp("embedded") / "data"
    conversation = load_locomo(DATA / "locomo" / "conv-26.json")[0]
    embedder = CachingEmbedder(UseEmbedder())
    settings = Settings(data_dir=data_dir, budget_tokens=BUDGET, store="embedded")
    roles = native_roles(embedder, settings)
    with TopicMemory(settings=settings, roles=roles, embedder=embedder) as memory:
        memory.import_messages(LOCOMO, conversation.messages)
        for text in CHATS:
            memory.chat(LOCOMO, text)
        memory.import_messages(SHORT, subject_records(["stocks", "kyoto"]))
        memory.chat(SHORT, "Which hotel did we pick in Kyoto?")
    return data_dir


def _target(postgres_uri: str, tmp_path: Path) -> MigrationTarget:
    return MigrationTarget(postgres_uri=postgres_uri, cache_dir=tmp_path / "cache")


@pytest.fixture
def memories(
    source_dir: Path, postgres_uri: str, tmp_path: Path, embedder: UseEmbedder
) -> Iterator[tuple[TopicMemory, TopicMemory, MigrationTarget]]:
    """Source and target memories as the migration opens them (after it ran)."""
    target = _target(postgres_uri, tmp_path)
    report = migrate_data_dir(source_dir, target, budget_tokens=BUDGET, embedder=embedder)
    assert report.ok, report.as_json()
    source, target_memory = open_memories(
        source_dir, target, budget_tokens=BUDGET, embedder=embedder
    )
    yield source, target_memory, target
    target_memory.close()
    source.close()


def _history(memory: TopicMemory, thread_id: str) -> list[tuple[Any, ...]]:
    config = memory.run_config(thread_id)
    return [
        (
            snapshot.config["configurable"]["checkpoint_id"],
            (snapshot.parent_config or {}).get("configurable", {}).get("checkpoint_id"),
            snapshot.metadata,
            snapshot.created_at,
            snapshot.next,
            snapshot.values,
        )
        for snapshot in memory.graph.get_state_history(config)
    ]


def test_threads_are_listed_from_the_checkpoint_database(source_dir: Path, tmp_path: Path) -> None:
    assert list_threads(source_dir) == [LOCOMO, SHORT]
    with pytest.raises(InputError, match="no checkpoints.sqlite"):
        list_threads(tmp_path)
    with pytest.raises(InputError, match="no such data directory"):
        list_threads(tmp_path / "missing")


def test_migrated_threads_keep_history_topics_and_context(
    memories: tuple[TopicMemory, TopicMemory, MigrationTarget],
) -> None:
    source, target, migration = memories
    for thread_id in (LOCOMO, SHORT):
        history = _history(source, thread_id)
        assert len(history) > 2
        assert _history(target, thread_id) == history  # ids, parents, metadata, values
        assert target.topics(thread_id) == source.topics(thread_id)
        assert target.transcript(thread_id) == source.transcript(thread_id)
        report = target.check(thread_id)
        assert report.ok, report.findings
    assert len(source.topics(LOCOMO)) >= 5
    # The retention limit of the embedded memory: 100 kept, pruned every 11 turns.
    assert 100 <= len(_history(source, LOCOMO)) <= 110
    # The retrieval cache was built on this machine by the migration: opening it embeds nothing.
    cache = migration.cache_dir / "threads"
    assert any(
        (directory / "retrieval" / "entries.jsonl").is_file() for directory in cache.iterdir()
    )
    for question in [*CHATS, "When did Caroline go to the LGBTQ conference?", "pottery class"]:
        assert window_ids(target.context(LOCOMO, question)) == window_ids(
            source.context(LOCOMO, question)
        ), question


def test_migrating_again_changes_nothing_and_the_target_chats_on(
    source_dir: Path, postgres_uri: str, tmp_path: Path, embedder: UseEmbedder
) -> None:
    target = _target(postgres_uri, tmp_path)
    first = migrate_data_dir(source_dir, target, budget_tokens=BUDGET, embedder=embedder)
    assert [row.copied_checkpoints > 0 for row in first.threads] == [True, True]
    again = migrate_data_dir(source_dir, target, budget_tokens=BUDGET, embedder=embedder)
    assert again.ok, again.as_json()
    assert [(row.copied_checkpoints, row.copied_records) for row in again.threads] == [
        (0, 0),
        (0, 0),
    ]
    _, memory = open_memories(source_dir, target, budget_tokens=BUDGET, embedder=embedder)
    with memory:
        before = len(_history(memory, SHORT))
        assert memory.chat(SHORT, "And what did I buy in stocks?")
        assert len(_history(memory, SHORT)) == before + 1
        report = memory.check(SHORT)
        assert report.ok, report.findings
    # The target's thread now differs from the source's: never overwritten.
    with pytest.raises(ThreadConflict, match=f"thread '{SHORT}'"):
        migrate_data_dir(
            source_dir, target, threads=[SHORT], budget_tokens=BUDGET, embedder=embedder
        )


def test_a_migration_cut_short_is_finished_by_the_next_run(
    source_dir: Path, postgres_uri: str, tmp_path: Path, embedder: UseEmbedder
) -> None:
    target = _target(postgres_uri, tmp_path)

    class Crash(Exception):
        pass

    def crash_after_ten(thread_id: str, step: str, done: int, total: int) -> None:
        if step == "checkpoints" and done == 10:
            raise Crash

    with pytest.raises(Crash):
        migrate_data_dir(
            source_dir, target, budget_tokens=BUDGET, embedder=embedder, progress=crash_after_ten
        )
    resumed = migrate_data_dir(source_dir, target, budget_tokens=BUDGET, embedder=embedder)
    assert resumed.ok, resumed.as_json()
    assert resumed.threads[0].copied_checkpoints == resumed.threads[0].checkpoints - 10
    assert resumed.threads[0].copied_records == 0  # the topics were copied before the crash
    source, memory = open_memories(source_dir, target, budget_tokens=BUDGET, embedder=embedder)
    with source, memory:
        for thread_id in (LOCOMO, SHORT):
            assert _history(memory, thread_id) == _history(source, thread_id)


def test_a_source_that_went_on_is_caught_up(
    postgres_uri: str, tmp_path: Path, embedder: UseEmbedder
) -> None:
    data_dir = tmp_path / "data"
    settings = Settings(data_dir=data_dir, budget_tokens=600, store="embedded")
    target = _target(postgres_uri, tmp_path)
    roles = native_roles(embedder)
    with TopicMemory(settings=settings, roles=roles, keep_checkpoints=4) as memory:
        memory.import_messages("t", subject_records(["stocks", "kyoto"]))
        migrate_data_dir(data_dir, target, budget_tokens=600, embedder=embedder)
        # Enough turns that the source's retention deletes every checkpoint copied above.
        memory.import_messages("t", subject_records(["sourdough", "fitness"], prefix="n"))
        memory.chat("t", "How long should the sourdough rise?")
    caught_up = migrate_data_dir(data_dir, target, budget_tokens=600, embedder=embedder)
    assert caught_up.ok, caught_up.as_json()
    assert caught_up.threads[0].copied_checkpoints == 4
    assert caught_up.threads[0].copied_records > 0
    source, migrated = open_memories(data_dir, target, budget_tokens=600, embedder=embedder)
    with source, migrated:
        assert _history(migrated, "t")[:4] == _history(source, "t")
        assert migrated.transcript("t") == source.transcript("t")
        assert migrated.topics("t") == source.topics("t")


def test_a_turn_cut_short_is_migrated_and_finished_on_the_target(
    postgres_uri: str, tmp_path: Path, embedder: UseEmbedder
) -> None:
    counted = default_token_counter("o200k_base")

    def failing_counter(text: str) -> int:
        if "BOOM" in text:
            raise RuntimeError("tokenizer down")
        return counted(text)

    data_dir = tmp_path / "data"
    settings = Settings(data_dir=data_dir, budget_tokens=600, store="embedded")
    roles = native_roles(embedder)
    with TopicMemory(settings=settings, roles=roles, token_counter=failing_counter) as memory:
        memory.import_messages("t", subject_records(["stocks", "kyoto", "sourdough"]))
        with pytest.raises(RuntimeError, match="tokenizer down"):
            memory.chat("t", "And the Kyoto trip? BOOM")
        assert memory.interrupted("t")
        pending = memory.checkpointer.get_tuple(memory.run_config("t")).pending_writes
    target = _target(postgres_uri, tmp_path)
    report = migrate_data_dir(data_dir, target, budget_tokens=600, embedder=embedder)
    assert report.threads[0].verification is not None
    assert report.threads[0].verification.check_ok, report.as_json()
    source, migrated = open_memories(data_dir, target, budget_tokens=600, embedder=embedder)
    with source, migrated:
        assert migrated.interrupted("t")
        assert migrated.checkpointer.get_tuple(migrated.run_config("t")).pending_writes == pending
        assert _history(migrated, "t") == _history(source, "t")
        migrated.resume("t")  # the saved question is answered on the target
        assert not migrated.interrupted("t")
        assert "BOOM" in migrated.transcript("t")[-2]["content"]
        assert migrated.check("t").ok


def test_a_thread_the_target_holds_already_is_refused(
    source_dir: Path, postgres_uri: str, tmp_path: Path, embedder: UseEmbedder
) -> None:
    target = _target(postgres_uri, tmp_path)
    settings = Settings(
        data_dir=tmp_path / "worker",
        budget_tokens=BUDGET,
        store="postgres",
        postgres_uri=postgres_uri,
    )
    with TopicMemory(settings=settings, roles=native_roles(embedder)) as other:
        other.chat(SHORT, "Something else entirely")
        history = _history(other, SHORT)
    with pytest.raises(ThreadConflict, match=f"thread '{SHORT}'.*nothing was overwritten"):
        migrate_data_dir(
            source_dir, target, threads=[SHORT], budget_tokens=BUDGET, embedder=embedder
        )
    with TopicMemory(settings=settings, roles=native_roles(embedder)) as other:
        assert _history(other, SHORT) == history


def test_the_topic_index_goes_to_a_chroma_server(
    source_dir: Path, postgres_uri: str, chroma_url: str, tmp_path: Path, embedder: UseEmbedder
) -> None:
    target = MigrationTarget(
        postgres_uri=postgres_uri, cache_dir=tmp_path / "cache", chroma_url=chroma_url
    )
    report = migrate_data_dir(
        source_dir, target, threads=[LOCOMO], budget_tokens=BUDGET, embedder=embedder
    )
    assert report.ok, report.as_json()
    collection = index_collection_name(LOCOMO)
    indexed = read_source_index(source_dir, LOCOMO)
    served = server_client(chroma_url).get_collection(collection).get(include=["metadatas"])
    assert len(indexed) >= 5
    assert {
        topic_id: (metadata or {})["status"]
        for topic_id, metadata in zip(served["ids"], served["metadatas"] or [], strict=True)
    } == {topic_id: status for topic_id, (_, status) in indexed.items()}
    assert not (tmp_path / "cache" / "index").exists()  # no local index beside the server's


def test_cli_migrates_and_reports_json(
    source_dir: Path,
    postgres_uri: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["migrate", "--from", str(source_dir), "--to", postgres_uri]
    args += ["--data-dir", str(tmp_path / "cache"), "--thread", SHORT]
    assert main([*args, "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["ok"] is True
    [row] = report["threads"]
    assert row["thread"] == SHORT
    assert row["check"] is True and row["same_context_ids"] is True
    assert row["checkpoints"] == row["copied_checkpoints"] > 0
    assert "migrating short (1/1)" in captured.err
    assert main(args) == 0  # again, as a table: nothing new
    table = capsys.readouterr().out
    assert "(0 new)" in table and "every check passed" in table


def test_cli_errors_are_one_line(
    source_dir: Path, postgres_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(source_dir, copy)
    cases = [
        (["--from", str(tmp_path / "nowhere"), "--to", postgres_uri], "no such data directory"),
        (["--from", str(copy), "--to", "mysql://x"], "expected a PostgreSQL URI"),
        (
            [
                "--from",
                str(copy),
                "--to",
                postgres_uri,
                "--thread",
                "ghost",
                "--data-dir",
                str(tmp_path / "c"),
            ],
            "no thread 'ghost'",
        ),
        (["--from", str(copy), "--to", postgres_uri, "--data-dir", str(copy)], "must not be"),
    ]
    for extra, expected in cases:
        try:
            status = main(["migrate", *extra])
        except SystemExit as usage_error:  # argparse: a bad argument
            status = int(usage_error.code or 0)
        assert status == 2
        error = capsys.readouterr().err.strip()
        assert expected in error and "\n" not in error, error
