"""``langgraph-topics topics --map FILE`` draws the hierarchy and timeline (PNG or Mermaid)."""

from __future__ import annotations

import json
from pathlib import Path

from conversations import subject_records

from langgraph_topics.cli.main import main
from langgraph_topics.viz import topic_map_mermaid

TOPICS = [
    {"id": "a", "name": "Kyoto trip", "status": "active", "message_count": 6, "parent_id": None},
    {"id": "b", "name": "ryokan [Gion]", "status": "dormant", "message_count": 2, "parent_id": "a"},
    {"id": "c", "name": "股票基本面", "status": "archived", "message_count": 4, "parent_id": None},
]


def test_mermaid_shows_hierarchy_timeline_and_status() -> None:
    text = topic_map_mermaid(TOPICS, {"2024-01-01": ["a", "c"], "2024-01-02": ["b"]})
    assert text.startswith("flowchart LR")
    assert "t_a --> t_b" in text
    assert '"2024-01-01: Kyoto trip, 股票基本面"' in text and "d0 --> d1" in text
    assert "ryokan  Gion" in text  # brackets would break the label
    assert "class t_b dormant" in text


def test_cli_writes_png_and_mermaid(tmp_path: Path) -> None:
    conversation = tmp_path / "c.jsonl"
    records = subject_records(["stocks", "kyoto", "sourdough"])
    conversation.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records))
    common = ["--thread", "t", "--data-dir", str(tmp_path / "d")]
    assert main(["import", str(conversation), *common, "--budget", "300"]) == 0
    png, mermaid = tmp_path / "out" / "map.png", tmp_path / "map.mmd"
    assert main(["topics", *common, "--map", str(png)]) == 0
    assert main(["topics", *common, "--map", str(mermaid)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = mermaid.read_text("utf-8")
    assert text.startswith("flowchart LR") and "timeline" in text and "2024-01-" in text
