"""The message index's entries file: the fast reading answers as a JSON parse line by line.

``entries.jsonl`` is read on every open of a thread; lines exactly as the index writes them are
taken apart by one regular expression, anything else is decoded line by line. These tests write
entries of any id, topic and time, damage the file at random, and check that the reading is
the line-by-line parse's, and that the expression takes every line the index writes without
escapes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langgraph_topics.retrieval import message_index
from langgraph_topics.retrieval.message_index import _decode_entries, _read_entries

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


def written(rows: list[tuple[str, str, float | None]]) -> bytes:
    """The lines as ``MessageIndex._write`` writes them."""
    return "".join(
        json.dumps({"id": i, "topic": t, "time": time}) + "\n" for i, t, time in rows
    ).encode("utf-8")


@RUNS
@given(rows=entries)
def test_written_entries_read_back_as_written(
    tmp_path: Path, rows: list[tuple[str, str, float | None]]
) -> None:
    path = tmp_path / "entries.jsonl"
    path.write_bytes(written(rows))
    read = _read_entries(path)
    assert list(zip(read.ids, read.topics, read.times, strict=True)) == rows
    plain = all("\\" not in json.dumps([i, t]) for i, t, _ in rows)  # nothing escaped
    if plain and all(time is None or math.isfinite(time) for _, _, time in rows):
        assert len(message_index._ENTRY_LINE.findall(path.read_bytes())) == len(rows)


@RUNS
@given(
    rows=entries.filter(bool),
    edits=st.lists(st.tuples(st.floats(0, 1), st.binary(max_size=3)), min_size=1, max_size=3),
)
def test_a_damaged_file_reads_as_a_line_by_line_parse_would(
    tmp_path: Path, rows: list[tuple[str, str, float | None]], edits: list[tuple[float, bytes]]
) -> None:
    raw = bytearray(written(rows))
    for where, replacement in edits:
        at = int(where * (len(raw) - 1))
        raw[at : at + 1] = replacement
    path = tmp_path / "entries.jsonl"
    path.write_bytes(bytes(raw))
    assert _read_entries(path) == _decode_entries(path, bytes(raw))


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
    read = _read_entries(path)
    assert read == _decode_entries(path, path.read_bytes())
    assert read.ids == ["m0"]  # the rest is indexed again from the topic store
