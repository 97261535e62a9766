"""The long Chinese histories built from MemoryBank's users (issue 39's hard dev set)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langgraph_topics.datasets import load_locomo
from langgraph_topics.datasets.memorybank_long import SPEAKER, long_histories, main

DEV = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "memorybank-cn"


def _turns(sample: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {
        turn["dia_id"]: turn
        for key, session in sample["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    }


def test_the_users_days_become_one_voices_long_history() -> None:
    samples = json.loads((DEV / "memorybank-cn-dev.json").read_text("utf-8"))
    forward, backward = long_histories(samples)
    for long in (forward, backward):
        turns = _turns(long)
        assert len(turns) == 1132 and len(long["qa"]) == 100
        assert {t["speaker"] for t in turns.values()} == {SPEAKER, "AI伴侣"}
        assert long["conversation"]["session_150_date_time"] == "9:00 am on 31 May, 2023"
    # Every question's evidence is the same text as in its own user's history.
    first_user, last_user = samples[0], samples[-1]
    question = first_user["qa"][0]
    moved = next(q for q in forward["qa"] if q["question"] == question["question"])
    original = _turns(first_user)
    assert [_turns(forward)[i]["text"] for i in moved["evidence"]] == [
        original[i]["text"] for i in question["evidence"]
    ]
    assert backward["qa"][0]["question"] == last_user["qa"][0]["question"]
    # A date a question names moves with its day: 2 May of the first user is its sixth day.
    dated = [q["question"] for q in forward["qa"] if "1月7日" in q["question"]]
    assert dated == ["我曾经在1月7日提到过我去了博物馆，你还记得我当时看了什么展览吗？"]


def test_the_shipped_file_is_what_the_builder_writes(tmp_path: Path) -> None:
    out = tmp_path / "long.json"
    main([str(DEV / "memorybank-cn-dev.json"), str(out)])
    assert out.read_text("utf-8") == (DEV / "memorybank-cn-long.json").read_text("utf-8")
    conversations = load_locomo(out)
    assert [c.sample_id for c in conversations] == ["mb-cn-long-1", "mb-cn-long-2"]
    assert all(q.evidence for c in conversations for q in c.questions)
