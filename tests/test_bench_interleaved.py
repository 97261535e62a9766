"""``bench topics --interleaved``: sessions of several conversations woven into one, scored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conversations import SUBJECTS

from langgraph_topics.bench.interleaving import Segment, interleave
from langgraph_topics.bench.partitions import fixed_chunks
from langgraph_topics.cli.main import main

SOURCES = ("kyoto", "stocks", "sourdough")


def _session(subject: str, number: int, exchanges: list[tuple[str, str]]) -> list[dict[str, str]]:
    turns = []
    for question, answer in exchanges:
        for speaker, text in (("Ann", question), ("Bot", answer)):
            turns.append(
                {"speaker": speaker, "dia_id": f"D{number}:{len(turns) + 1}", "text": text}
            )
    return turns


def _locomo(tmp_path: Path) -> Path:
    """Three conversations, one subject each, in two sessions of two exchanges."""
    samples = []
    for subject in SOURCES:
        exchanges = SUBJECTS[subject]
        conversation: dict[str, Any] = {"speaker_a": "Ann", "speaker_b": "Bot"}
        for number, part in ((1, exchanges[:2]), (2, exchanges[2:4])):
            conversation[f"session_{number}_date_time"] = f"10:00 am on {number} May, 2023"
            conversation[f"session_{number}"] = _session(subject, number, part)
        samples.append({"sample_id": subject, "conversation": conversation, "qa": []})
    path = tmp_path / "three.json"
    path.write_text(json.dumps(samples, ensure_ascii=False), "utf-8")
    return path


def _memorybank(tmp_path: Path) -> Path:
    """Two English users of two days each."""
    root = tmp_path / "memorybank" / "en"
    root.mkdir(parents=True)
    users = {
        name: {
            "name": name,
            "history": {
                f"2023-05-0{day}": [{"query": f"{topic} question {day}", "response": "An answer."}]
                for day in (1, 2)
            },
        }
        for name, topic in (("Ann", "Painting"), ("Bob", "Sailing"))
    }
    (root / "memory_bank_en.json").write_text(json.dumps(users), "utf-8")
    return root.parent


def _segment(source: str, session: int, size: int) -> Segment:
    messages = [
        {"id": f"D{session}:{t}", "role": ("user", "assistant")[t % 2], "content": f"{source} {t}"}
        for t in range(size)
    ]
    return Segment(source, f"{source} D{session}", messages)


def test_segments_are_woven_round_robin_with_new_ids_and_one_clock() -> None:
    woven = interleave(
        "w",
        {
            "a": [_segment("a", 1, 2), _segment("a", 2, 2), _segment("a", 3, 2)],
            "b": [_segment("b", 1, 4)],
        },
    )
    ids = [m["id"] for m in woven.messages]
    assert ids == [
        "a/D1:0", "a/D1:1", "b/D1:0", "b/D1:1", "b/D1:2", "b/D1:3",
        "a/D2:0", "a/D2:1", "a/D3:0", "a/D3:1",
    ]  # fmt: skip
    assert woven.sources["b/D1:2"] == "b" and woven.segments["a/D2:1"] == "a D2"
    stamps = [m["timestamp"] for m in woven.messages]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert all("name" not in m for m in woven.messages)  # a name would give the source away
    with pytest.raises(ValueError, match="two sources"):
        interleave("w", {"a": [_segment("a", 1, 2)], "b": []})


def test_fixed_chunks_cut_by_count() -> None:
    ids = [str(i) for i in range(5)]
    assert list(fixed_chunks(ids, 2).values()) == ["c0", "c0", "c1", "c1", "c2"]
    with pytest.raises(ValueError, match="positive"):
        fixed_chunks(ids, 0)


def test_cli_interleaved_scores_the_memory_beside_the_baselines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    status = main(
        [
            "bench", "topics", str(_locomo(tmp_path)), "--interleaved",
            "--memorybank", str(_memorybank(tmp_path)), "--budget", "300,1500",
            "--json", "--out", str(out),
        ]
    )  # fmt: skip
    assert status == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report == json.loads((out / "topics-interleaved.json").read_text("utf-8"))
    assert "locomo @300" in captured.err  # progress lines
    locomo, bank = report["conversations"]
    assert (locomo["messages"], locomo["segments"], locomo["sources"]) == (24, 6, 3)
    assert report["config"]["conversations"] == list(SOURCES)
    # Woven K1 S1 D1 K2 S2 D2 (4 messages each): the first chunk holds 8 + 8 + 4, the second 4.
    chunks = locomo["baselines"]["chunks of 20 messages"]
    assert (chunks["blocks"], chunks["largest_share"]) == (2, round(20 / 24, 4))
    assert chunks["b3_precision"] == pytest.approx((8 * 8 * 2 / 20 + 4 * 4 / 20 + 4) / 24, 1e-3)
    assert chunks["b3_recall"] == pytest.approx((8 + 8 + 4) / 24, abs=1e-4)
    pairs = locomo["baselines"]["one topic per message pair"]
    assert (pairs["blocks"], pairs["homogeneity"], pairs["b3_precision"]) == (12, 1.0, 1.0)
    segments = locomo["reference"]["one topic per segment"]
    assert (segments["b3_precision"], segments["b3_recall"]) == (1.0, 0.5)
    everything = locomo["reference"]["one topic for all"]
    assert (everything["v_measure"], everything["b3_recall"]) == (0.0, 1.0)
    assert everything["b3_f1"] == pytest.approx(0.5, abs=1e-4)  # P = 3 × (1/3)² = 1/3
    for budget in ("300", "1500"):
        run = locomo["budgets"][budget]
        assert all(0.0 <= run[k] <= 1.0 for k in ("v_measure", "b3_f1", "homogeneity"))
        assert set(run["beats_baselines"]) == {"b3_f1", "v_measure"}
    assert (bank["conversation"], bank["sources"], bank["messages"]) == ("memorybank-en", 2, 8)


def test_cli_interleaved_table_and_one_line_faults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _locomo(tmp_path)
    status = main(
        ["bench", "topics", str(data), "--interleaved", "--budget", "400", "--out", str(tmp_path)]
    )
    assert status == 0
    printed = capsys.readouterr().out
    assert "B³ F1" in printed and "chunks of 20 messages" in printed
    assert "locomo: 24 messages, 6 segments of 3 sources" in printed
    with pytest.raises(SystemExit, match="interleaving needs two sources or more"):
        main(["bench", "topics", str(data), "--interleaved", "--conversations", "kyoto"])
