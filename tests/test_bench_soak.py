"""``bench soak``: its command line and report fields (the figures are the benchmark's own)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import run_cli

from langgraph_topics.bench.soak import SoakConfig, disk_parts, user_lines


def test_bench_soak_json_reports_the_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run_cli(
        capsys, "bench", "soak", "--turns", "30", "--json", "--out", str(tmp_path / "out")
    )
    assert status == 0, err
    report = json.loads(out)
    assert report["turns"] == 30 and report["messages"] == 60
    assert report["reference_turn"] == 15 and report["window"] == 15
    assert report["check_ok"] is True and report["messages_held"] == 60
    for field in ("rss_mb", "median_turn_s"):
        assert set(report[field]) == {"reference", "last"}
        assert all(value > 0 for value in report[field].values())
    assert report["rss_ratio"] > 0 and report["median_ratio"] > 0
    assert report["disk_bytes"] > 0 and report["disk_bytes_per_message"] > 0
    assert "checkpoints.sqlite" in report["disk_parts_bytes_per_message"]
    assert set(report["met"]) == set(report["targets"])
    assert report["samples"][-1]["turn"] == 30
    assert any(line.startswith("soak: turn 30/30") for line in err)
    assert (tmp_path / "out" / "soak.json").is_file()


def test_bench_soak_refuses_bad_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit, match="--turns must be at least 2"):
        run_cli(capsys, "bench", "soak", "--turns", "1", "--out", str(tmp_path))
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "file").write_text("x")
    with pytest.raises(SystemExit, match="new or empty directory"):
        run_cli(capsys, "bench", "soak", "--data-dir", str(taken), "--out", str(tmp_path))


def test_soak_reference_and_window_fit_a_short_run() -> None:
    assert SoakConfig(turns=10_000).reference_turn == 1000
    assert SoakConfig(turns=10_000).window_turns == 100
    short = SoakConfig(turns=30)
    assert short.reference_turn == 15 and short.window_turns == 15


def test_user_lines_vary_and_repeat_with_the_seed() -> None:
    lines = user_lines(500, seed=3)
    assert len(lines) == 500 and lines == user_lines(500, seed=3)
    assert len(set(lines)) > 480  # mostly new texts, as a real conversation gives caches
    assert any(not line.isascii() for line in lines)  # Chinese subjects too


def test_disk_parts_name_the_thread_directory_parts(tmp_path: Path) -> None:
    (tmp_path / "threads" / "t1" / "topics").mkdir(parents=True)
    (tmp_path / "threads" / "t1" / "topics" / "a.jsonl").write_bytes(b"x" * 10)
    (tmp_path / "threads" / "t1" / "tuning.jsonl").write_bytes(b"x" * 3)
    (tmp_path / "checkpoints.sqlite").write_bytes(b"x" * 5)
    (tmp_path / "checkpoints.sqlite-wal").write_bytes(b"x" * 7)
    assert disk_parts(tmp_path) == {
        "checkpoints.sqlite": 12,
        "thread/topics": 10,
        "thread/tuning.jsonl": 3,
    }
