"""One checkpoint per turn, and only the newest are kept: disk grows with messages, not turns."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from conversations import subject_records

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.roles.native import native_roles


def _checkpoints(data_dir: Path, thread: str) -> int:
    with sqlite3.connect(data_dir / "checkpoints.sqlite") as connection:
        row = connection.execute(
            "SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?", (thread,)
        ).fetchone()
    return int(row[0])


def _memory(data_dir: Path, keep_checkpoints: int) -> TopicMemory:
    embedder = HashEmbedder()
    settings = Settings(data_dir=data_dir, budget_tokens=600)
    return TopicMemory(
        settings=settings,
        roles=native_roles(embedder, settings),
        embedder=embedder,
        keep_checkpoints=keep_checkpoints,
    )


def test_each_turn_writes_one_checkpoint_and_old_ones_are_pruned(tmp_path: Path) -> None:
    with _memory(tmp_path, keep_checkpoints=0) as memory:
        memory.chat("t", "hello")
        assert _checkpoints(tmp_path, "t") == 1  # durability "exit": the turn's end only
        memory.chat("t", "and again")
        assert _checkpoints(tmp_path, "t") == 2
    with _memory(tmp_path, keep_checkpoints=3) as memory:
        records = subject_records(["stocks", "kyoto", "sourdough"])
        memory.import_messages("t", records)
        for n in range(4):
            memory.chat("t", f"question {n} about the sourdough starter")
        assert _checkpoints(tmp_path, "t") == 3
        report = memory.check("t")
        assert report.ok, report.findings
        ids = [m["id"] for m in memory.transcript("t")]
        assert len(ids) == len(set(ids)) == 4 + len(records) + 8  # both memories, q and a
        assert _checkpoints(tmp_path, "other") == 0


def test_pruning_every_few_turns_keeps_the_count_within_a_tenth_over_keep(
    tmp_path: Path,
) -> None:
    counts = []
    with _memory(tmp_path, keep_checkpoints=20) as memory:
        for n in range(30):
            memory.chat("t", f"question {n} about the sourdough starter")
            counts.append(_checkpoints(tmp_path, "t"))
        assert memory.check("t").ok
    # One checkpoint a turn (and one a split written after a reply) until there are 20 ...
    full = next(n for n, count in enumerate(counts) if count >= 20)
    assert counts[0] == 1 and counts[: full + 1] == sorted(set(counts[: full + 1])), counts
    # ... then pruned every few turns, never far over.
    assert all(20 <= count <= 22 for count in counts[full:]), counts
    assert counts.count(20) < 10, "a prune every turn: not amortised"
    with _memory(tmp_path, keep_checkpoints=20) as memory:  # a new process prunes at once
        memory.chat("t", "one more")
        assert _checkpoints(tmp_path, "t") == 20
