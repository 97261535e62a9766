"""Decoded topics: a reopened store reads a topic's messages from the copy saved beside its file.

The copy (``topics/<topic_id>.decoded``) holds the message records of the file's first bytes,
every branch's; the store applies its branch and its duplicate rule to them. These tests read
the same files with the copy and without it (under branch filters, with duplicates, odd
records, damaged lines and torn tails) and check that the messages and the warnings are the
same; that the copy is used; and that a copy that no longer matches its file, or is damaged,
is ignored with one line and saved again.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from test_topic_catalog import (
    GROWN_FILES,
    LOGGER,
    RUNS,
    catalog_every,
    grow_files,
    msg,
    warnings_of,
)

from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores import decoded_copies, decoded_topics, durable
from langgraph_topics.stores.decoded_copies import DECODED_SUFFIX
from langgraph_topics.stores.decoded_topics import decoded_copy
from langgraph_topics.stores.seq_ranges import SeqRanges
from langgraph_topics.stores.topic_store import JsonlTopicStore


@contextmanager
def saved_on_every_read() -> Iterator[None]:
    """A decoded copy is saved again whenever its file has anything past it."""
    with (
        mock.patch.object(decoded_copies, "REFRESH_BYTES", 0),
        mock.patch.object(decoded_copies, "REFRESH_SHARE", 1 << 40),
    ):
        yield


def read_all(root: Path, visible: SeqRanges | None = None) -> dict[str, list[StoredMessage]]:
    store = JsonlTopicStore(root, visible=visible)
    return {topic_id: store.messages(topic_id) for topic_id in store.topic_ids()}


def read_saving(root: Path, branches: list[SeqRanges]) -> None:
    """Read every topic on the first branch (or all of them), saving every copy."""
    with saved_on_every_read():
        read_all(root, branches[0] if branches else None)


def copies(root: Path) -> list[Path]:
    return sorted((root / "topics").glob(f"*{DECODED_SUFFIX}"))


def without_copies(root: Path, target: Path) -> Path:
    shutil.copytree(root, target, ignore=shutil.ignore_patterns(f"*{DECODED_SUFFIX}"))
    return target


def compare(root: Path, scratch: Path, visible: SeqRanges | None) -> None:
    """Read ``root`` (with its copies) and a copy without them: same messages, same warnings."""
    bare = without_copies(root, scratch / f"bare-{len(list(scratch.iterdir()))}")
    with warnings_of(bare) as plain_warnings:
        plain = read_all(bare, visible)
    with warnings_of(root) as saved_warnings:
        saved = read_all(root, visible)
    assert saved == plain
    assert saved_warnings == plain_warnings


@RUNS
@given(**GROWN_FILES)
def test_reading_through_the_decoded_copy_answers_as_decoding_every_line(
    files: dict[str, list[bytes]], cuts: list[float], ending: str, branches: list[SeqRanges]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root, scratch = Path(tmp) / "thread", Path(tmp) / "scratch"
        scratch.mkdir()
        # The copy covers a prefix of each file (saved by a store of some branch reading it).
        grow_files(root, files, cuts, ending, lambda: read_saving(root, branches))
        for visible in [None, *branches]:
            compare(root, scratch, visible)
        # Saved again over everything (where the file is whole): the same again.
        read_saving(root, [])
        for visible in [None, *branches]:
            compare(root, scratch, visible)


def build(root: Path) -> tuple[JsonlTopicStore, list[str]]:
    """Two topics of messages holding what JSON can, read once so that their copies are saved."""
    store = JsonlTopicStore(root)
    first = store.create_topic("Stocks", "valuation", created_at="2024-05-01T10:00:00+00:00")
    second = store.create_topic("Kyoto", "travel", created_at="2024-05-02T10:00:00+00:00")
    for n in range(12):
        topic = first if n % 3 else second
        odd: dict[str, Any] = {
            "timestamp": f"2024-05-{1 + n // 4:02d}T12:00:00+09:00",
            "name": None,
            "tool_calls": [{"id": f"c{n}", "name": "look", "args": {"q": "京都 ✈", "k": 2.5}}],
            "additional_kwargs": {"big": 2**62, "nested": [[], {}, True, -0.0, 1e300]},
        }
        store.append(topic["id"], [msg(f"m{n}a", f"text {n} 日本語 🙂", **odd), msg(f"m{n}b")])
    # A line repeating an id (an append made again after a crash): the first copy is kept.
    repeated = {"type": "message", "seq": 999, "stored_at": "", **msg("m1a", "again")}
    with store.file_path(first["id"]).open("ab") as handle:
        handle.write(json.dumps(repeated).encode() + b"\n")
    with saved_on_every_read():
        read_all(root)
    return store, [first["id"], second["id"]]


def test_a_reopened_store_decodes_only_the_lines_past_the_copy(tmp_path: Path) -> None:
    root = tmp_path / "thread"
    store, topics = build(root)
    expected = read_all(without_copies(root, tmp_path / "bare"))
    assert [path.stem for path in copies(root)] == sorted(topics)
    store.append(topics[0], [msg("late", "after the copy")])
    decoded: list[bytes] = []
    real = decoded_topics._decoded

    def spy(raw: bytes) -> Any:
        decoded.append(raw)
        return real(raw)

    with mock.patch.object(decoded_topics, "_decoded", spy):
        again = read_all(root)
    assert b"".join(decoded).count(b"\n") == 1  # the one line appended since
    assert again[topics[0]][:-1] == expected[topics[0]]
    assert again[topics[0]][-1]["id"] == "late"
    assert again[topics[1]] == expected[topics[1]]
    assert [m["id"] for m in again[topics[0]]].count("m1a") == 1
    assert next(m for m in again[topics[0]] if m["id"] == "m1a")["content"] != "again"


def test_a_small_topic_is_not_saved(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("t", "")
    store.append(topic["id"], [msg("m1")])
    read_all(tmp_path)
    assert copies(tmp_path) == []


@pytest.mark.parametrize(
    "damage",
    ["garbage", "cut short", "empty", "other version", "payload flipped", "foreign", "rewritten"],
)
def test_an_unusable_copy_is_ignored_with_one_line_and_saved_again(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "thread"
    store, topics = build(root)
    expected = read_all(without_copies(root, tmp_path / "bare"))
    path = decoded_copy(store.file_path(topics[0])).path
    raw = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(b"\x00\xff" * 40)
    elif damage == "cut short":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "other version":
        path.write_bytes(raw.replace(b"decoded topic v1", b"decoded topic v9", 1))
    elif damage == "payload flipped":
        path.write_bytes(raw[:-10] + bytes([raw[-10] ^ 1]) + raw[-9:])
    elif damage == "foreign":
        shutil.copyfile(decoded_copy(store.file_path(topics[1])).path, path)
    else:  # the topic file rewritten below the copy, its length the same
        topic_file = store.file_path(topics[0])
        topic_file.write_bytes(topic_file.read_bytes().replace(b'"m1b"', b'"m9b"'))
        expected = read_all(without_copies(root, tmp_path / "bare-rewritten"))
        assert "m9b" in [m["id"] for m in expected[topics[0]]]

    with saved_on_every_read(), caplog.at_level(logging.WARNING, logger=LOGGER):
        assert read_all(root) == expected
    lines = [r.getMessage() for r in caplog.records if DECODED_SUFFIX in r.getMessage()]
    assert len(lines) == 1 and path.name in lines[0], lines
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert read_all(root) == expected
    assert [r for r in caplog.records if DECODED_SUFFIX in r.getMessage()] == []


@pytest.mark.parametrize("failure", ["a directory in the way", "disk full"])
def test_a_copy_that_cannot_be_read_or_saved_costs_one_warning(
    tmp_path: Path, failure: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("t", "")
    ids = [f"m{n}" for n in range(5)]
    store.append(topic["id"], [msg(message_id) for message_id in ids])
    path = decoded_copy(store.file_path(topic["id"])).path
    if failure == "a directory in the way":
        path.mkdir()  # can be neither read nor replaced
    full_disk = OSError(28, "No space left on device") if failure == "disk full" else None
    with (
        saved_on_every_read(),
        mock.patch.object(
            decoded_copies,
            "replace_durably",
            side_effect=full_disk,
            wraps=durable.replace_durably,
        ),
        caplog.at_level(logging.WARNING, logger=LOGGER),
    ):
        for _ in range(3):  # said once, not on every read
            assert [m["id"] for m in read_all(tmp_path)[topic["id"]]] == ids
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and path.name in said[0], said
    reason = "not saved" if failure == "disk full" else "unreadable"
    assert reason in said[0]
    assert not path.is_file()


def test_appends_keep_the_copy_nearly_whole_for_the_next_process(tmp_path: Path) -> None:
    ids = [f"m{n}" for n in range(120)]
    with catalog_every(300), mock.patch.object(decoded_copies, "REFRESH_BYTES", 600):
        store = JsonlTopicStore(tmp_path)
        topic = store.create_topic("t", "")
        for message_id in ids:  # appends only: the store never decodes the file
            store.append(topic["id"], [msg(message_id, "x" * 40)])
    assert [path.stem for path in copies(tmp_path)] == [topic["id"]]
    decoded: list[bytes] = []
    real = decoded_topics._decoded

    def spy(raw: bytes) -> Any:
        decoded.append(raw)
        return real(raw)

    with mock.patch.object(decoded_topics, "_decoded", spy):
        again = read_all(tmp_path)
    assert [m["id"] for m in again[topic["id"]]] == ids
    size = store.file_path(topic["id"]).stat().st_size
    assert 0 < size - sum(map(len, decoded))  # the copy served the first part…
    assert sum(map(len, decoded)) <= 600 + 300 + size // decoded_copies.REFRESH_SHARE  # …most
