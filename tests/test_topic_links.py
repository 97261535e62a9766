"""Links between topics (seed 000 §9) and the time index kept beside the topic files.

A merge and a division are their own links (``stores/link_kinds``); topics quoted together in
one window get a ``related`` link once (``links/quoted_together``). ``topics`` (API, ``--json``,
the table) lists them, the Mermaid map draws them, ``check`` verifies where they point; and
``topics/time-index.json`` follows ``time_index()``, rebuilt when missing or damaged.
"""

from __future__ import annotations

import errno
import json
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import AnyStore, MemoryFactory
from langgraph.store.memory import InMemoryStore
from test_review import THREAD, cli, imported, topics_by_block
from test_subtopics import divided, kyoto_history, settings_for

from langgraph_topics import TopicMemory
from langgraph_topics.checks import CheckReport, check_links
from langgraph_topics.links.quiet import link_once
from langgraph_topics.links.quoted_together import link_quoted_together, quoted_topics
from langgraph_topics.roles.protocols import Roles
from langgraph_topics.services import thread_directory
from langgraph_topics.state.records import AssembledContext, StoredMessage, TopicResult
from langgraph_topics.stores import time_index_file as time_index_module
from langgraph_topics.stores.base_store_topics import BaseStoreTopicStore
from langgraph_topics.stores.embeddings import UseEmbedder
from langgraph_topics.stores.time_index_file import TIME_INDEX_FILE, read_time_index
from langgraph_topics.stores.topic_store import LINKS_FILE, TOPICS_DIR, JsonlTopicStore
from langgraph_topics.viz.topic_map import topic_links, topic_map_mermaid

KYOTO_QUESTION = "Which ryokan near Gion did we pick for Kyoto, and is Fushimi Inari early best?"


def msg(number: int, day: int) -> StoredMessage:
    return {
        "id": f"m{number}",
        "role": "user",
        "content": f"message {number}",
        "timestamp": f"2024-01-{day:02d}T10:00:00",
    }


@pytest.fixture(params=["jsonl", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> AnyStore:
    """A fresh thread of each embedded topic store (Postgres: ``test_base_store_topics``)."""
    if request.param == "jsonl":
        return JsonlTopicStore(tmp_path)
    return BaseStoreTopicStore(InMemoryStore(), "t")


@pytest.fixture
def memory(tmp_path: Path, embedder: UseEmbedder) -> Iterator[TopicMemory]:
    """A memory whose Kyoto topic grows past its limit (``test_subtopics``'s settings)."""
    with TopicMemory(settings=settings_for(tmp_path), embedder=embedder) as made:
        yield made


def reopened(store: AnyStore) -> AnyStore:
    """The same thread as the branch of ``store`` sees it, read again."""
    return store.on_branch(store.visible_ranges())


def time_index_file(memory: TopicMemory, thread: str) -> Path:
    return thread_directory(Path(memory.settings.data_dir), thread) / TOPICS_DIR / TIME_INDEX_FILE


# ------------------------------------------------------------------------------ the stores


def test_a_division_and_a_merge_are_links_of_both_topics(store: AnyStore) -> None:
    parent = store.create_topic("trip", "")["id"]
    other = store.create_topic("hotels", "")["id"]
    store.append(parent, [msg(n, n) for n in range(1, 5)])
    store.append(other, [msg(9, 9)])
    first, second = store.split_topic(
        parent,
        [
            {"name": "a", "brief": "", "message_ids": ["m1", "m2"]},
            {"name": "b", "brief": "", "message_ids": ["m3", "m4"]},
        ],
    )
    before_merge = store.visible_ranges()
    store.merge_topics(other, first)
    for view in (store, reopened(store)):
        assert view.links(parent) == [(first, "subtopic"), (second, "subtopic")]
        assert view.links(first) == [(parent, "subtopic"), (other, "merged")]
        assert view.links(second) == [(parent, "subtopic")]
        assert view.links(other) == [(first, "merged")]  # the retired topic names the kept one
    # A branch that never recorded the merge sees no merge link either.
    assert store.on_branch(before_merge).links(first) == [(parent, "subtopic")]
    # A relation recorded as a link record too is listed once.
    store.link(parent, second, "subtopic")
    assert store.links(second) == [(parent, "subtopic")]


def test_a_link_on_the_side_never_raises_and_asks_the_store_once(
    store: AnyStore, caplog: pytest.LogCaptureFixture
) -> None:
    a, b, c = (store.create_topic(name, "")["id"] for name in "abc")
    store.append(c, [msg(1, 1)])
    store.merge_topics(c, a)
    ranges = store.visible_ranges()
    with caplog.at_level(logging.DEBUG, logger="langgraph_topics.links"):
        assert link_once(store, c, b, "related")  # retired meanwhile: skipped
        assert link_once(store, "topic-gone", b, "related")  # deleted meanwhile: skipped
        assert link_once(store, a, a, "related")  # itself: skipped
    assert store.visible_ranges() == ranges  # nothing written
    assert "skipped" in caplog.text
    assert link_once(store, a, b, "related")
    assert not link_once(store, a, b, "related")  # known: the store is not asked again
    assert reopened(store).links(b) == [(a, "related")]


class CountingLinks:
    """A topic store standing in for bookkeeping's: counts the link calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []

    def link(self, from_id: str, to_id: str, kind: str) -> None:
        self.calls.append((from_id, to_id, kind))


class FailingLinks:
    """A topic store whose link writes fail with ``errno``."""

    def __init__(self, code: int) -> None:
        self.code, self.calls = code, 0

    def link(self, from_id: str, to_id: str, kind: str) -> None:
        self.calls += 1
        raise OSError(self.code, os.strerror(self.code), "links.jsonl")


def test_a_store_that_cannot_write_a_link_costs_a_warning_and_a_full_disk_the_turn(
    caplog: pytest.LogCaptureFixture,
) -> None:
    read_only: Any = FailingLinks(errno.EROFS)
    with caplog.at_level(logging.WARNING, logger="langgraph_topics.links"):
        assert link_once(read_only, "t-a", "t-b", "related")
    assert "not written" in caplog.text
    assert link_once(read_only, "t-a", "t-b", "related") and read_only.calls == 2  # asked again
    full: Any = FailingLinks(errno.ENOSPC)
    with pytest.raises(OSError, match="No space"):  # the turn's one disk-full error, at once
        link_once(full, "t-a", "t-b", "related")


def window(quoted: Sequence[str], topic_ids: Sequence[str]) -> AssembledContext:
    context: Any = {
        "referenced_messages": [{"id": i, "role": "user", "content": i} for i in quoted],
        "topic_ids": list(topic_ids),
    }
    return context  # type: ignore[no-any-return]


def result(topic_id: str, *referenced: str) -> TopicResult:
    found: Any = {"topic_id": topic_id, "referenced_message_ids": list(referenced)}
    return found  # type: ignore[no-any-return]


def test_topics_quoted_together_are_linked_once_whatever_their_order() -> None:
    results = {
        "t-b": result("t-b", "b1"),
        "t-a": result("t-a", "a1", "a2"),
        "t-c": result("t-c", "c1"),  # its quote gave way to the budget
        "t-d": result("t-d"),  # shown by its summary alone
    }
    context = window(["b1", "a2"], ["t-b", "t-a", "t-c", "t-d"])
    assert quoted_topics(context, results) == ["t-b", "t-a"]
    assert quoted_topics(window(["a1"], ["t-a"]), results) == []
    assert quoted_topics(None, results) == []
    store: Any = CountingLinks()
    assert link_quoted_together(store, context, results)
    assert store.calls == [("t-a", "t-b", "related")]  # smaller id first
    assert not link_quoted_together(store, window(["a1", "b1"], ["t-a", "t-b"]), results)
    assert store.calls == [("t-a", "t-b", "related")]  # the same pair: no store call


def test_only_the_two_best_quoted_topics_are_linked() -> None:
    # A window quoting six topics would otherwise link fifteen pairs, a synced write each,
    # and soon make most topics "related" to most others (bench soak: 16 links a turn).
    results = {t: result(t, f"{t}-1") for t in ("t-c", "t-a", "t-b")}
    context = window(["t-c-1", "t-a-1", "t-b-1"], ["t-c", "t-a", "t-b"])  # best first
    store: Any = CountingLinks()
    assert link_quoted_together(store, context, results)
    assert store.calls == [("t-a", "t-c", "related")]


def test_check_notes_a_link_to_a_topic_the_branch_does_not_have(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("a", "")["id"]
    record = {"type": "link", "seq": 999, "from": topic, "to": "topic-gone", "kind": "related"}
    (tmp_path / LINKS_FILE).write_text(json.dumps(record) + "\n", "utf-8")
    report = CheckReport()
    check_links(report, JsonlTopicStore(tmp_path))
    assert report.ok and report.counts["links"] == 1
    assert any("topic-gone" in finding for finding in report.findings)


# -------------------------------------------------------------------------- the time index


def test_the_time_index_file_follows_splits_and_merges_and_only_they_write_it(
    tmp_path: Path,
) -> None:
    store = JsonlTopicStore(tmp_path, visible=[])
    path = tmp_path / TOPICS_DIR / TIME_INDEX_FILE
    assert not path.exists()  # no topic yet: nothing to keep
    topic = store.create_topic("a", "")["id"]
    store.append(topic, [msg(1, 1), msg(2, 2)])
    assert read_time_index(path) == store.time_index()
    written = path.stat().st_mtime_ns
    path.write_bytes(path.read_bytes())  # the same bytes, a new time: a rewrite would show
    marked = path.stat().st_mtime_ns
    store.append(topic, [msg(3, 2)])  # a day the topic had: nothing to write
    assert path.stat().st_mtime_ns == marked >= written
    other = store.create_topic("b", "")["id"]
    store.append(other, [msg(4, 3)])
    store.split_topic(
        topic,
        [
            {"name": "x", "brief": "", "message_ids": ["m1"]},
            {"name": "y", "brief": "", "message_ids": ["m2", "m3"]},
        ],
    )
    assert read_time_index(path) == store.time_index()
    store.merge_topics(other, store.children(topic)[0])
    assert read_time_index(path) == store.time_index()
    assert list(store.time_index()) == ["2024-01-01", "2024-01-02", "2024-01-03"]


@pytest.mark.parametrize("code", [errno.EROFS, errno.ENOSPC])
def test_a_time_index_that_cannot_be_written_fails_only_on_a_full_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, caplog: pytest.LogCaptureFixture
) -> None:
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("a", "")["id"]

    def refuse(path: Path, data: bytes, **options: object) -> None:
        raise OSError(code, os.strerror(code), str(path))

    monkeypatch.setattr(time_index_module, "replace_durably", refuse)
    if code == errno.ENOSPC:  # the turn's next write would meet it: its one error, now
        with pytest.raises(OSError):
            store.append(topic, [msg(1, 1)])
    else:
        with caplog.at_level(logging.WARNING):
            store.append(topic, [msg(1, 1)])
        assert "could not write the time index" in caplog.text
    assert store.time_index() == {"2024-01-01": [topic]}  # the append itself is kept


@pytest.mark.parametrize("damage", ["deleted", "corrupted"])
def test_a_missing_or_damaged_time_index_is_rebuilt_on_open(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = JsonlTopicStore(tmp_path, visible=[])
    topic = store.create_topic("a", "")["id"]
    store.append(topic, [msg(1, 1)])
    path = tmp_path / TOPICS_DIR / TIME_INDEX_FILE
    if damage == "deleted":
        path.unlink()
    else:
        path.write_text('{"version": 1, "days": [', "utf-8")
    with caplog.at_level(logging.WARNING):
        again = reopened(store)
    assert read_time_index(path) == again.time_index() == {"2024-01-01": [topic]}
    assert ("rebuilt" in caplog.text) == (damage == "corrupted")  # a missing one, silently


# ------------------------------------------------------------------- through the memory


def test_topics_quoted_together_are_related_and_a_merge_links_the_kept_topic(
    make_memory: MemoryFactory,
    roles: Roles,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    memory = imported(make_memory, roles)
    blocks = topics_by_block(memory)
    kyoto_a, kyoto_b = blocks["kyotoA"], blocks["kyotoB"]
    memory.chat(THREAD, KYOTO_QUESTION)
    assert {kyoto_a, kyoto_b} <= set(memory.state(THREAD)["context"]["topic_ids"])
    listed = {t["id"]: t for t in memory.topics(THREAD)}
    assert listed[kyoto_a]["links"] == [{"topic_id": kyoto_b, "kind": "related"}]
    assert listed[kyoto_b]["links"] == [{"topic_id": kyoto_a, "kind": "related"}]
    assert "links" not in listed[blocks["stocks"]]
    links_file = thread_directory(Path(memory.settings.data_dir), THREAD) / LINKS_FILE
    memory.chat(THREAD, KYOTO_QUESTION)  # quoted together again: not written again
    assert len(links_file.read_text("utf-8").splitlines()) == 1
    report = memory.check(THREAD)
    assert report.ok and report.counts["links"] == 1, report.findings

    merged = memory.review(THREAD, now="2024-06-14")["merged"]
    assert [(m["into"], m["retired"]) for m in merged] == [(kyoto_a, kyoto_b)]
    data = ["--thread", THREAD, "--data-dir", str(memory.settings.data_dir)]
    code, out, err = cli(capsys, "topics", "--json", *data)
    assert code == 0, err
    kept = next(t for t in json.loads(out) if t["id"] == kyoto_a)
    assert kept["links"] == [
        {"topic_id": kyoto_b, "kind": "merged"},
        {"topic_id": kyoto_b, "kind": "related"},
    ]
    code, out, _ = cli(capsys, "topics", *data)
    row = next(line for line in out.splitlines() if line.startswith(kyoto_a))
    assert "merged 1, related 1" in row

    target = tmp_path / "map.mmd"
    code, _, err = cli(capsys, "topics", "--map", str(target), *data)
    assert code == 0, err
    drawn = target.read_text("utf-8")
    node_a, node_b = (f"t_{t.replace('-', '_')}" for t in (kyoto_a, kyoto_b))
    assert f"{node_b} -. merged .-> {node_a}" in drawn  # retired → kept
    assert f"{node_a} -. related .- {node_b}" in drawn
    assert f'{node_b}["{kyoto_b}<br/>merged"]:::gone' in drawn  # the retired topic's node
    assert memory.check(THREAD).ok


def test_a_division_lists_its_subtopic_links_and_the_map_draws_no_second_edge(
    memory: TopicMemory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    thread = "trip"
    memory.import_messages(thread, kyoto_history())
    parent_id, record = next(iter(divided(memory, thread).items()))
    listed = {t["id"]: t for t in memory.topics(thread)}
    subtopic_links = [{"topic_id": child, "kind": "subtopic"} for child in record["children"]]
    assert listed[parent_id]["links"][: len(subtopic_links)] == subtopic_links
    for child in record["children"]:
        assert {"topic_id": parent_id, "kind": "subtopic"} in listed[child]["links"]
    data = ["--thread", thread, "--data-dir", str(memory.settings.data_dir)]
    code, out, err = cli(capsys, "topics", "--json", *data)
    assert code == 0, err
    assert {t["id"]: t.get("links") for t in json.loads(out)} == {
        t["id"]: t.get("links") for t in listed.values()
    }
    target = tmp_path / "map.mmd"
    assert cli(capsys, "topics", "--map", str(target), *data)[0] == 0
    drawn = target.read_text("utf-8")
    assert "==>" in drawn and "-. subtopic" not in drawn  # the tree's edges, not twice

    # The time index beside the topic files: written by the splits, equal to the store's.
    store = memory.services.stores(thread).topic_store
    path = time_index_file(memory, thread)
    assert read_time_index(path) == store.time_index()
    assert memory.check(thread).ok


@pytest.mark.parametrize("damage", ["deleted", "corrupted"])
def test_topics_and_check_survive_a_missing_or_damaged_time_index(
    make_memory: MemoryFactory, roles: Roles, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    memory = imported(make_memory, roles)
    path = time_index_file(memory, THREAD)
    expected = memory.services.stores(THREAD).topic_store.time_index()
    assert read_time_index(path) == expected
    if damage == "deleted":
        path.unlink()
    else:
        path.write_bytes(b"\x00\xff not json")
    listed = memory.topics(THREAD)  # this process's store needs no file
    report = memory.check(THREAD)
    assert report.ok, report.findings
    assert any(TIME_INDEX_FILE in finding for finding in report.findings)  # a note
    data = ["--thread", THREAD, "--data-dir", str(memory.settings.data_dir)]
    code, out, err = cli(capsys, "topics", "--json", *data)  # another process: rebuilt
    assert code == 0, err
    assert [t["id"] for t in json.loads(out)] == [t["id"] for t in listed]
    assert read_time_index(path) == expected
    code, out, err = cli(capsys, "check", "--json", *data)
    assert code == 0 and json.loads(out)["ok"], out
    assert TIME_INDEX_FILE not in out


# ------------------------------------------------------------------------------- the map


def test_the_map_draws_each_link_once() -> None:
    topics = [
        {
            "id": "t-1",
            "name": "Kyoto",
            "status": "active",
            "message_count": 3,
            "parent_id": None,
            "links": [
                {"topic_id": "t-2", "kind": "related"},
                {"topic_id": "t-3", "kind": "subtopic"},
                {"topic_id": "t-9", "kind": "merged"},
            ],
        },
        {
            "id": "t-2",
            "name": "Osaka",
            "status": "dormant",
            "message_count": 1,
            "parent_id": None,
            "links": [{"topic_id": "t-1", "kind": "related"}],
        },
        {
            "id": "t-3",
            "name": "Kyoto hotels",
            "status": "active",
            "message_count": 2,
            "parent_id": "t-1",
            "links": [{"topic_id": "t-1", "kind": "subtopic"}],
        },
    ]
    assert topic_links(topics) == [("t-1", "t-2", "related"), ("t-9", "t-1", "merged")]
    drawn = topic_map_mermaid(topics, {})
    assert drawn.count(" -. ") == 2
    assert "t_t_1 -. related .- t_t_2" in drawn and "t_t_9 -. merged .-> t_t_1" in drawn
    assert "t_t_1 ==> t_t_3" in drawn
