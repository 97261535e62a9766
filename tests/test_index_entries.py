"""The message index's entries file: every fast reading answers as a JSON parse line by line.

``entries.jsonl`` is read on every open of a thread; lines exactly as the index writes them are
taken apart by one regular expression, anything else is decoded line by line, and the rows a
saved copy covers (``entries.decoded``) are not decoded at all. These tests write entries of
any id, topic and time, append, reopen, cut and damage the file at random, and check that the
reading is the line-by-line parse's; that the expression takes every line the index writes
without escapes; and that a reopened index decodes only the lines past its copy.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_decoded_topics import saved_on_every_read

from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.retrieval import index_entries
from langgraph_topics.retrieval.index_entries import (
    Entries,
    EntriesFile,
    decode_entries,
    entry_lines,
    read_entries,
)
from langgraph_topics.retrieval.message_index import MessageIndex
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores import decoded_copies
from langgraph_topics.stores.decoded_copies import DECODED_SUFFIX

RUNS = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
texts = st.text(max_size=12) | st.sampled_from(["m1", "topic-0a1b2c3d", "", '"', "\\", "{"])
times = st.none() | st.floats(allow_nan=False) | st.integers(-(10**12), 10**12).map(float)
entries = st.lists(st.tuples(texts, texts, times), max_size=12)


Row = tuple[str, str, float | None]


def written(rows: list[Row]) -> bytes:
    """The lines as the index writes them."""
    return entry_lines([i for i, _, _ in rows], [t for _, t, _ in rows], [m for _, _, m in rows])


def read(path: Path) -> tuple[Entries, bool]:
    """The file read fast: by the regular expression where it can be."""
    return read_entries(path, path.read_bytes())


def plain(path: Path) -> tuple[Entries, bool]:
    """The file decoded line by line, as if nothing else existed."""
    return decode_entries(path, path.read_bytes() if path.exists() else b"")


def damage(raw: bytes, edits: list[tuple[float, bytes]]) -> bytes:
    """``raw`` with a few bytes replaced (or removed, or added) at random places."""
    damaged = bytearray(raw)
    for where, replacement in edits:
        at = int(where * (len(damaged) - 1))
        damaged[at : at + 1] = replacement
    return bytes(damaged)


edits_strategy = st.lists(st.tuples(st.floats(0, 1), st.binary(max_size=3)), min_size=1, max_size=3)


@RUNS
@given(rows=entries)
def test_written_entries_read_back_as_written(tmp_path: Path, rows: list[Row]) -> None:
    path = tmp_path / "entries.jsonl"
    path.write_bytes(written(rows))
    found, whole = read(path)
    assert whole and list(zip(found.ids, found.topics, found.times, strict=True)) == rows
    unescaped = all("\\" not in json.dumps([i, t]) for i, t, _ in rows)
    if unescaped and all(time is None or math.isfinite(time) for _, _, time in rows):
        assert len(index_entries._ENTRY_LINE.findall(path.read_bytes())) == len(rows)


@RUNS
@given(rows=entries.filter(bool), edits=edits_strategy)
def test_a_damaged_file_reads_as_a_line_by_line_parse_would(
    tmp_path: Path, rows: list[Row], edits: list[tuple[float, bytes]]
) -> None:
    path = tmp_path / "entries.jsonl"
    path.write_bytes(damage(written(rows), edits))
    assert read(path) == plain(path)


@pytest.mark.parametrize(
    "line",
    [
        b'{"id": "m1", "topic": "t\x00", "time": null}\n',  # a control character unescaped
        b'{"id": "m1\x1f", "topic": "t", "time": null}\n',
        b'{"id": "m1", "topic": "t", "time": 01}\n',  # not JSON numbers
        b'{"id": "m1", "topic": "t", "time": 1.}\n',
        b'{"id": "m1", "topic": "t", "time": 1.5e}\n',
    ],
)
def test_a_line_a_json_parser_refuses_is_not_taken(tmp_path: Path, line: bytes) -> None:
    path = tmp_path / "entries.jsonl"
    good = written([("m0", "t", 1.5)])
    path.write_bytes(good + line + good.replace(b"m0", b"m2"))
    found, whole = read(path)
    assert (found, whole) == plain(path)
    assert found.ids == ["m0"] and not whole  # the rest is indexed again from the topic store


# --- the decoded copy -------------------------------------------------------------------------


def copy_path(path: Path) -> Path:
    return path.with_suffix(DECODED_SUFFIX)


steps = st.lists(
    st.one_of(
        st.tuples(st.just("append"), entries.filter(bool)),
        st.tuples(st.just("reopen"), st.booleans()),  # saving copies, or not
        st.tuples(st.just("cut"), st.floats(0, 1)),
        st.tuples(st.just("damage"), edits_strategy),
    ),
    max_size=8,
)


@RUNS
@given(steps=steps)
def test_reading_through_the_copy_answers_as_decoding_every_line(
    tmp_path: Path, steps: list[tuple[str, Any]]
) -> None:
    path = tmp_path / "entries.jsonl"
    file = EntriesFile(path)
    with saved_on_every_read():
        file.read()
        for step, argument in steps:
            if step == "append":
                file.append(*zip(*argument, strict=True))  # type: ignore[arg-type]
            elif step == "cut":
                found = file.read()
                file.rewrite(found.cut(int(argument * len(found))))
            elif step == "damage" and path.exists() and path.stat().st_size:
                path.write_bytes(damage(path.read_bytes(), argument))
                file = EntriesFile(path)
                file.read()
            elif step == "reopen":
                file = EntriesFile(path)
                if argument:
                    assert file.read() == plain(path)[0]
    assert EntriesFile(path).read() == plain(path)[0]  # without saving anything


def test_a_reopened_index_decodes_only_the_entries_past_its_copy(tmp_path: Path) -> None:
    root = tmp_path / "retrieval"
    index = MessageIndex(root, HashEmbedder(8))
    with mock.patch.object(decoded_copies, "REFRESH_BYTES", 300):
        for batch in range(6):
            said = [_said(10 * batch + n) for n in range(10)]
            index.add(said, [f"topic-{batch % 2}"] * 10)
    assert copy_path(root / "entries.jsonl").is_file()
    decoded: list[bytes] = []
    real = index_entries.read_entries

    def spy(path: Path, raw: bytes, first_line: int = 1) -> tuple[Entries, bool]:
        decoded.append(raw)
        return real(path, raw, first_line)

    with mock.patch.object(index_entries, "read_entries", spy):
        again = MessageIndex(root, HashEmbedder(8))
    assert (again.ids, again.topics, again.times) == (index.ids, index.topics, index.times)
    size = (root / "entries.jsonl").stat().st_size
    assert 0 < len(decoded[0]) <= 300 + size // decoded_copies.REFRESH_SHARE


def test_a_crash_cut_leaves_no_copy_to_complain_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "retrieval"
    with saved_on_every_read():
        index = MessageIndex(root, HashEmbedder(8))
        index.add([_said(n) for n in range(6)], ["topic"] * 6)
        # A crash inside the next split: its vectors written, its entries not all.
        with (root / "vectors.f16").open("ab") as vectors:
            vectors.write(bytes(3 * 8 * 2))
        with (root / "entries.jsonl").open("ab") as lines:
            lines.write(written([("m6", "topic", None), ("m7", "topic", None)])[:-9])
        with caplog.at_level(logging.WARNING):
            cut = MessageIndex(root, HashEmbedder(8))
            assert cut.ids == [f"m{n}" for n in range(7)]
            again = MessageIndex(root, HashEmbedder(8))
    assert again.ids == cut.ids
    assert [r for r in caplog.records if DECODED_SUFFIX in r.getMessage()] == []


def _said(n: int) -> StoredMessage:
    day = f"2024-01-0{1 + n % 9}"
    return {"id": f"m{n}", "role": "user", "content": f"message {n}", "timestamp": day}
