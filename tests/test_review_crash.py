"""A review killed between its writes (SIGKILL, no cleanup) leaves a thread that reopens whole.

The child process runs ``TopicMemory.review`` with one store write wrapped to kill the process
right after it: after the merge record, or after the second archive filing. Whatever it left,
the next process sees the thread as the last turn left it (invariants 1 and 5: ``check``
passes, every message is held once), and a second review finishes the job.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import MemoryFactory
from fakes import with_roles
from review_support import BlockSplitter, block_of, block_records

from langgraph_topics import TopicMemory
from langgraph_topics.roles.protocols import Roles

THREAD = "t"

CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from langgraph_topics import Settings, TopicMemory
    from langgraph_topics.stores import archive_shelves, topic_store

    point = sys.argv[2]
    owner, name = {
        "merge": (topic_store.JsonlTopicStore, "merge_topics"),
        "filing": (archive_shelves.FileArchiveShelf, "save"),
    }[point]
    original = getattr(owner, name)
    calls = []

    def dying(self, *args, **kwargs):
        original(self, *args, **kwargs)
        calls.append(1)
        if point == "merge" or len(calls) == 2:
            os.kill(os.getpid(), signal.SIGKILL)

    setattr(owner, name, dying)
    memory = TopicMemory(settings=Settings(data_dir=sys.argv[1], keep_recent=8))
    memory.review("t", now="2030-01-01")
    print("not killed")
    """
)


@pytest.mark.parametrize("point", ["merge", "filing"])
def test_a_review_killed_between_its_writes_loses_nothing_and_a_second_one_finishes(
    make_memory: MemoryFactory, roles: Roles, tmp_path: Path, point: str
) -> None:
    splitter = BlockSplitter()
    memory = make_memory(budget=900, roles=with_roles(roles, splitter=splitter), keep_recent=8)
    splitter.locate = lambda i: memory.services.stores(THREAD).topic_store.locate(i)
    memory.import_messages(THREAD, block_records())
    store = memory.services.stores(THREAD).topic_store
    blocks = {block_of(store.messages(t)[0]["id"]): t for t in store.topic_ids()}
    before = memory.state(THREAD)["topics"]
    data_dir = Path(memory.settings.data_dir)
    memory.close()

    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, str(script), str(data_dir), point],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    topics_dir = next((data_dir / "threads").iterdir()) / "topics"
    retired_file = (topics_dir / f"{blocks['kyotoB']}.jsonl").read_text()
    assert '"type": "merged"' in retired_file  # the crash left the merge record behind ...
    filed = list(topics_dir.glob("archived/*/*.json"))
    assert len(filed) == (2 if point == "filing" else 0)  # ... and, later, two filings

    survivor = TopicMemory(data_dir=data_dir, budget_tokens=900)
    try:
        report = survivor.check(THREAD)
        assert report.ok, report.findings
        state = survivor.state(THREAD)
        assert state["topics"] == before  # the registry as the last turn left it
        assert "review" not in state
        seen = survivor.services.stores(THREAD).topic_store
        assert blocks["kyotoB"] in seen.topic_ids()  # the merge a crash cut short is unseen
        assert survivor.archived(THREAD) == []  # filings without the state's word are ignored
        ids = [m["id"] for m in survivor.transcript(THREAD)]
        assert sorted(ids) == sorted(r["id"] for r in block_records())

        finished = survivor.review(THREAD, now="2030-01-01")
        assert [(m["into"], m["retired"]) for m in finished["merged"]] == [
            (blocks["kyotoA"], blocks["kyotoB"])
        ]
        assert {a["topic_id"] for a in finished["archived"]} == set(blocks.values()) - {
            blocks["kyotoB"]
        }
        report = survivor.check(THREAD)
        assert report.ok, report.findings
        ids = [m["id"] for m in survivor.transcript(THREAD)]
        assert sorted(ids) == sorted(r["id"] for r in block_records())
        assert survivor.review(THREAD, now="2030-01-01")["merged"] == []
    finally:
        survivor.close()


def test_a_review_step_that_fails_is_finished_by_the_next_writer(
    make_memory: MemoryFactory, roles: Roles, monkeypatch: pytest.MonkeyPatch
) -> None:
    splitter = BlockSplitter()
    memory = make_memory(budget=900, roles=with_roles(roles, splitter=splitter), keep_recent=8)
    splitter.locate = lambda i: memory.services.stores(THREAD).topic_store.locate(i)
    memory.import_messages(THREAD, block_records())
    import langgraph_topics.nodes.review_archive as review_archive

    def unavailable(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(review_archive, "archive", unavailable)
    with pytest.raises(OSError, match="disk full"):
        memory.review(THREAD, now="2030-01-01")
    monkeypatch.undo()
    assert memory.interrupted(THREAD)  # the review's remaining steps are saved
    assert memory.check(THREAD).ok  # the merge it did is recorded with its records
    reviewed = set(memory.state(THREAD)["topics"])
    memory.chat(THREAD, "hello again")  # the next writer finishes the review first
    assert not memory.interrupted(THREAD)
    state = memory.state(THREAD)
    assert state["review"]["at"] == "2030-01-01T00:00:00+00:00"  # judged as first asked
    assert {a["topic_id"] for a in state["review"]["archived"]} == reviewed
    assert all(state["topics"][t]["status"] == "archived" for t in reviewed)
    assert memory.check(THREAD).ok
