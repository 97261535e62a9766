"""The tuning log's append: whole lines, a moved-away log started again, a bad disk only logged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langgraph_topics.tuning.log import append_line, read_tuning_log, rotate


def test_lines_are_appended_whole_and_the_directory_is_made(tmp_path: Path) -> None:
    path = tmp_path / "threads" / "t" / "tuning.jsonl"
    append_line(path, {"turn": 1, "name": "普通话 ✓"})
    append_line(path, {"turn": 2, "when": tmp_path})  # not JSON: written as its str()
    assert read_tuning_log(path) == [
        {"turn": 1, "name": "普通话 ✓"},
        {"turn": 2, "when": str(tmp_path)},
    ]
    path.rename(tmp_path / "rotated.jsonl")
    append_line(path, {"turn": 3})
    assert read_tuning_log(path) == [{"turn": 3}]
    assert len(read_tuning_log(tmp_path / "rotated.jsonl")) == 2


def test_a_log_that_cannot_be_written_fails_no_turn(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "file").write_text("", "utf-8")
    append_line(tmp_path / "file" / "tuning.jsonl", {"turn": 1})  # its directory is a file
    assert "could not append to the tuning log" in caplog.text


def test_a_long_log_is_compressed_aside_and_read_back_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import langgraph_topics.tuning.log as tuning

    monkeypatch.setattr(tuning, "ROTATE_BYTES", 2_000)
    path = tmp_path / "tuning.jsonl"
    lines = [{"turn": n, "detail": "x" * 100} for n in range(60)]
    for line in lines:
        append_line(path, line)
    parts = sorted(tmp_path.glob("tuning-*.jsonl.zst"))
    assert len(parts) >= 2 and path.stat().st_size < 2_000
    assert sum(p.stat().st_size for p in parts) < 60 * 110 / 4  # compressed
    assert read_tuning_log(path, rotated=True) == lines  # nothing lost, in order
    assert read_tuning_log(path) == lines[-len(read_tuning_log(path)) :]
    assert not list(tmp_path.glob("*.rotating"))


def test_a_log_larger_than_the_compression_window_is_read_back_whole(tmp_path: Path) -> None:
    path = tmp_path / "tuning.jsonl"
    lines = [
        {"turn": n, "scores": [round(n * 0.37 % 1, 4)] * 8, "note": f"t{n * 7919}"}
        for n in range(12_000)
    ]
    with path.open("w", encoding="utf-8") as log_file:
        for line in lines:
            log_file.write(json.dumps(line) + "\n")
    written = path.stat().st_size
    assert written > 1_000_000  # larger than the 512 KB window: compressed block by block

    rotate(path)

    (part,) = tmp_path.glob("tuning-*.jsonl.zst")
    assert part.stat().st_size < written / 4
    assert not path.exists() and not list(tmp_path.glob("*.rotating"))
    assert read_tuning_log(path, rotated=True) == lines
