"""The MemoryBank (Chinese) dev set: the shipped JSON, its labels, and the converter's checks."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from langgraph_topics.datasets import load_locomo, memorybank_to_locomo
from langgraph_topics.datasets.memorybank import ASSISTANT, main

DATASET = Path(__file__).parent.parent / "benchmarks" / "data" / "memorybank-cn"
SHIPPED = DATASET / "memorybank-cn-dev.json"
LABELS = DATASET / "labels.jsonl"
CJK = re.compile(r"[\u4e00-\u9fff]")
SESSION = re.compile(r"^session_(\d+)$")


def _labels() -> list[dict[str, Any]]:
    return [json.loads(line) for line in LABELS.read_text("utf-8").splitlines() if line.strip()]


def _shipped() -> list[dict[str, Any]]:
    samples: list[dict[str, Any]] = json.loads(SHIPPED.read_text("utf-8"))
    return samples


def _sessions(sample: dict[str, Any]) -> list[tuple[str, list[dict[str, str]]]]:
    """(date_time, turns) of each session of a sample, in session order."""
    conversation = sample["conversation"]
    numbers = sorted(int(m.group(1)) for key in conversation if (m := SESSION.match(key)))
    return [(conversation[f"session_{n}_date_time"], conversation[f"session_{n}"]) for n in numbers]


def test_shipped_qa_matches_the_labels() -> None:
    samples, labels = _shipped(), _labels()
    assert [s["sample_id"] for s in samples] == [f"mb-cn-{i:02d}" for i in range(1, 16)]
    users = [s["conversation"]["speaker_a"] for s in samples]
    assert list(dict.fromkeys(label["user"] for label in labels)) == users
    for sample in samples:
        assert sample["conversation"]["speaker_b"] == ASSISTANT
        user = sample["conversation"]["speaker_a"]
        expected = [
            {
                "question": label["question"],
                "answer": label["answer"],
                "evidence": label["evidence"],
                "category": 4,
            }
            for label in labels
            if label["user"] == user
        ]
        assert sample["qa"] == expected


def test_shipped_turns_follow_the_id_scheme() -> None:
    for sample in _shipped():
        user = sample["conversation"]["speaker_a"]
        sessions = _sessions(sample)
        days = [datetime.strptime(when, "%I:%M %p on %d %B, %Y") for when, _ in sessions]
        assert days == sorted(days) and all((d.hour, d.minute) == (9, 0) for d in days)
        for number, (_, turns) in enumerate(sessions, start=1):
            assert turns and len(turns) % 2 == 0
            for position, turn in enumerate(turns, start=1):
                assert turn["dia_id"] == f"D{number}:{position}"
                assert turn["speaker"] == (user if position % 2 else ASSISTANT)
                assert turn["text"].strip()


def test_reconverting_the_shipped_data_reproduces_it(tmp_path: Path) -> None:
    """Rebuild MemoryBank-format inputs from the shipped JSON and convert them again."""
    samples, labels = _shipped(), _labels()
    history: dict[str, Any] = {}
    for sample in samples:
        days: dict[str, list[dict[str, str]]] = {}
        for when, turns in _sessions(sample):
            day = datetime.strptime(when, "%I:%M %p on %d %B, %Y").date().isoformat()
            days[day] = [
                {"query": query["text"], "response": response["text"]}
                for query, response in zip(turns[::2], turns[1::2], strict=True)
            ]
        history[sample["conversation"]["speaker_a"]] = {"history": days}
    questions: dict[str, list[str]] = {}
    for label in labels:
        questions.setdefault(label["user"], []).append(label["question"])
    history_path, probing_path = tmp_path / "history.json", tmp_path / "probing.jsonl"
    history_path.write_text(json.dumps(history, ensure_ascii=False), "utf-8")
    probing_path.write_text(
        "".join(json.dumps({u: q}, ensure_ascii=False) + "\n" for u, q in questions.items()),
        "utf-8",
    )
    assert memorybank_to_locomo(history_path, probing_path, LABELS) == samples

    out = tmp_path / "out" / "dev.json"
    main([str(history_path), str(probing_path), str(LABELS), str(out)])
    assert out.read_text("utf-8") == SHIPPED.read_text("utf-8")


def test_load_locomo_reads_fifteen_chinese_conversations() -> None:
    conversations = load_locomo(SHIPPED)
    assert len(conversations) == 15
    assert sum(len(c.messages) for c in conversations) == 1132
    assert sum(len(c.questions) for c in conversations) == len(_labels()) == 100
    for conversation in conversations:
        assert conversation.skipped_evidence == []
        assert all(CJK.search(m["content"]) for m in conversation.messages[:4])
        known = {m["id"] for m in conversation.messages}
        for question in conversation.questions:
            assert CJK.search(question.question)
            assert question.category == 4
            assert set(question.evidence) <= known
    with_evidence = [q for c in conversations for q in c.questions if q.evidence]
    assert len(with_evidence) == 100


def _tiny(tmp_path: Path, labels: list[dict[str, Any]]) -> tuple[Path, Path, Path]:
    history = {
        "小明": {
            "history": {
                "2023-04-28": [{"query": "我今天跑了五公里。", "response": "真厉害！"}],
                "2023-04-27": [
                    {"query": "你好，我叫小明。", "response": "你好，小明。"},
                    {"query": "我喜欢川菜。", "response": "川菜很好吃。"},
                ],
            }
        }
    }
    paths = tmp_path / "history.json", tmp_path / "probing.jsonl", tmp_path / "labels.jsonl"
    paths[0].write_text(json.dumps(history, ensure_ascii=False), "utf-8")
    questions = {"小明": ["我喜欢什么菜系？", "我跑了多远？"]}
    paths[1].write_text(json.dumps(questions, ensure_ascii=False) + "\n", "utf-8")
    paths[2].write_text(
        "".join(json.dumps(label, ensure_ascii=False) + "\n" for label in labels), "utf-8"
    )
    return paths


def test_converter_numbers_days_by_date(tmp_path: Path) -> None:
    labels = [
        {"user": "小明", "question": "我跑了多远？", "answer": "五公里", "evidence": ["D2:1"]},
        {"user": "小明", "question": "我喜欢什么菜系？", "answer": "川菜", "evidence": ["D1:3"]},
    ]
    [sample] = memorybank_to_locomo(*_tiny(tmp_path, labels))
    conversation = sample["conversation"]
    assert sample["sample_id"] == "mb-cn-01"
    assert conversation["session_1_date_time"] == "9:00 am on 27 April, 2023"
    assert conversation["session_2_date_time"] == "9:00 am on 28 April, 2023"
    assert [t["dia_id"] for t in conversation["session_1"]] == ["D1:1", "D1:2", "D1:3", "D1:4"]
    assert conversation["session_2"][0] == {
        "speaker": "小明",
        "dia_id": "D2:1",
        "text": "我今天跑了五公里。",
    }
    # Questions keep the probing file's order.
    assert [qa["answer"] for qa in sample["qa"]] == ["川菜", "五公里"]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"user": "小明", "evidence": ["D3:1"]}, r"labels\.jsonl:2: unknown evidence id.*D3:1"),
        ({"user": "小明", "evidence": ["D1:5"]}, r"labels\.jsonl:2: unknown evidence id.*D1:5"),
        ({"user": "小红", "evidence": ["D1:1"]}, r"labels\.jsonl:2: unknown user '小红'"),
    ],
)
def test_unknown_label_ids_raise_naming_the_line(
    tmp_path: Path, bad: dict[str, Any], message: str
) -> None:
    good = {"user": "小明", "question": "我喜欢什么菜系？", "answer": "川菜", "evidence": ["D1:3"]}
    bad = {"question": "我跑了多远？", "answer": "五公里", **bad}
    with pytest.raises(ValueError, match=message):
        memorybank_to_locomo(*_tiny(tmp_path, [good, bad]))
