"""One memory per user across threads (issue 40) on the ``postgres`` profile.

The embedded profile's scenarios (``test_user_scope.py``) on a throw-away PostgreSQL: the
registry is items of the shared store under ``("langgraph_topics", "users", <user key>)``,
a user's thread keeps its topics under the namespace label ``@<user key>@<thread>``, and a
second worker (another data directory on the same database) sees the same scopes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conversations import SUBJECTS
from test_user_scope import (
    FACT,
    QUESTION,
    open_memory,
    system_prompt,
    threads_read_by_turns,
    three_threads,
)

from langgraph_topics import TopicMemory
from langgraph_topics.migration.user_scope import assign_threads
from langgraph_topics.stores.base_store_topics import NAMESPACE_PREFIX

OLAF = "My brother Olaf moved to Tromsø to study whales."
OLAF_QUESTION = "Where did my brother Olaf move?"


def open_shared(uri: str, data_dir: Path, **changes: Any) -> TopicMemory:
    return open_memory(data_dir, store="postgres", postgres_uri=uri, **changes)


@pytest.fixture
def memory(postgres_uri: str, tmp_path: Path) -> Iterator[TopicMemory]:
    with open_shared(postgres_uri, tmp_path / "worker-a") as opened:
        yield opened


def test_a_fact_of_thread_one_is_quoted_in_thread_three(
    memory: TopicMemory, postgres_uri: str, tmp_path: Path
) -> None:
    three_threads(memory, "ann")
    assert "Lisbon" in system_prompt(memory, "ann", "user")
    assert "Lisbon" not in system_prompt(memory, "ann", "thread")
    assert memory.shared_store is not None
    assert [t["thread_id"] for t in memory.user("ann").threads()] == ["t1", "t2", "t3"]
    # Another worker, with an empty data directory, reads the same scope.
    with open_shared(postgres_uri, tmp_path / "worker-b") as other:
        prompt = system_prompt(other, "ann", "user")
        line = next(line for line in prompt.splitlines() if "Lisbon" in line)
        assert "(thread “t1”)" in line and line.startswith("[20")


def test_a_turn_reads_only_the_most_recently_active_other_threads(
    postgres_uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_shared(postgres_uri, tmp_path / "worker-a", scope_threads=2) as memory:
        runs = threads_read_by_turns(memory, monkeypatch)
        assert runs == {"new": ["t1", "t4"], "t2": ["new", "t1"]}
    # Another worker sees the same order (it lives in the database, not the data directory).
    with open_shared(postgres_uri, tmp_path / "worker-b") as other:
        assert other.scope_registry.recent("ann") == ["t2", "new", "t1", "t4", "t3"]


def test_two_users_with_the_same_thread_names_never_see_each_other(memory: TopicMemory) -> None:
    three_threads(memory, "ann")
    three_threads(memory, "bob", fact=OLAF)
    ann_prompt = system_prompt(memory, "ann", "user", OLAF_QUESTION)
    bob_prompt = system_prompt(memory, "bob", "user")
    assert "Tromsø" not in ann_prompt and "Olaf" not in ann_prompt
    assert "Lisbon" not in bob_prompt and "Greta" not in bob_prompt
    assert "Tromsø" in system_prompt(memory, "bob", "user", OLAF_QUESTION)
    ann, bob = memory.user("ann"), memory.user("bob")
    for thread in ("t1", "t2", "t3"):
        ann_ids = {m["id"] for m in memory.transcript(ann.thread(thread))}
        bob_ids = {m["id"] for m in memory.transcript(bob.thread(thread))}
        assert ann_ids and bob_ids and not ann_ids & bob_ids


def _labels(memory: TopicMemory, opening: str) -> list[str]:
    store = memory.shared_store
    assert store is not None
    found = store.list_namespaces(prefix=(NAMESPACE_PREFIX,), max_depth=2, limit=1000)
    return [ns[1] for ns in found if ns[1].startswith(opening)]


def test_forget_leaves_nothing_of_the_user_in_the_database(
    postgres_uri: str, tmp_path: Path
) -> None:
    import psycopg

    small = {"budget_tokens": 600, "keep_recent": 6}
    with open_shared(postgres_uri, tmp_path / "worker", **small) as memory:
        three_threads(memory, "ann")
        three_threads(memory, "bob", fact=OLAF)
        ann = memory.user("ann")
        for subject in ("stocks", "kyoto"):  # enough to split: topics in the shared store
            for question, _ in SUBJECTS[subject]:
                ann.chat("t2", question)
        memory.wait_idle()
        assert _labels(memory, "@ann-"), "ann's thread t2 should have split into topics"
        with open_shared(postgres_uri, tmp_path / "worker-b", **small) as other:
            assert "Lisbon" in system_prompt(other, "ann", "user")  # b caches ann's threads
        assert ann.remnants()
        assert len(ann.forget()) == 3
        assert ann.remnants() == []
        assert not _labels(memory, "@ann-")
    with open_shared(postgres_uri, tmp_path / "worker-b", **small) as other:
        # The shared rows are gone; worker b's own cache of ann's threads is its to sweep.
        left = other.user("ann").remnants()
        assert left and all("worker-b" in line or "collection" in line for line in left)
        assert other.user("ann").forget() == []
        assert other.user("ann").remnants() == []
    with open_shared(postgres_uri, tmp_path / "worker", **small) as memory:
        assert "Tromsø" in system_prompt(memory, "bob", "user", OLAF_QUESTION)
        assert memory.check(memory.user("bob").thread("t1")).ok
    with psycopg.connect(postgres_uri) as connection:
        bob = connection.execute(
            "SELECT count(*) FROM checkpoints WHERE thread_id LIKE %s", ("%bob-%",)
        ).fetchone()
        assert bob is not None and bob[0] > 0
        for table, column in (
            ("checkpoints", "thread_id"),
            ("checkpoint_writes", "thread_id"),
            ("checkpoint_blobs", "thread_id"),
            ("store", "prefix"),
        ):
            rows = connection.execute(
                f"SELECT count(*) FROM {table} WHERE {column} LIKE %s",  # noqa: S608
                ("%ann-%",),
            ).fetchone()
            assert rows is not None and rows[0] == 0, table
        texts = connection.execute("SELECT value::text FROM store").fetchall()
        assert not [t for (t,) in texts if "Lisbon" in t or "Greta" in t or "Kyoto" in t]


def test_migrate_assigns_a_plain_thread_to_a_user(memory: TopicMemory) -> None:
    memory.chat("old", FACT)
    memory.chat("old", "Which tomato varieties grow well on a balcony?")
    before = memory.transcript("old")
    assigned = assign_threads(memory, "ann", ["old"])
    assert [a.thread_id for a in assigned] == ["old"] and assigned[0].messages == len(before)
    assert not memory.exists("old")
    ann = memory.user("ann", scope="user")
    assert memory.transcript(ann.thread("old")) == before
    assert "Lisbon" in ann.context("new", QUESTION)["context"]["system_prompt"]
