"""The split trigger: seed 000's 70 % of the budget (default) or seed 001 T1's dynamic rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.nodes.estimate import over_threshold
from langgraph_topics.roles.native import native_roles


def test_the_two_rules_on_the_same_window() -> None:
    # budget 1,000, system prompt 100: available = 900, 60 % of it = 540 tokens of history.
    budget70 = Settings(budget_tokens=1000)
    dynamic = Settings(budget_tokens=1000, split_threshold="dynamic")
    assert budget70.split_threshold == "budget70"  # the default is seed 000's rule
    assert not over_threshold(budget70, 100, 650) and over_threshold(dynamic, 100, 650)
    assert not over_threshold(dynamic, 100, 640)  # 540 of history: not over 540
    assert over_threshold(budget70, 100, 701) and over_threshold(dynamic, 100, 701)
    # A heavy system prompt (600): the 70 % rule splits a history of 200 tokens, which cannot
    # make room for it; the dynamic rule waits for 60 % of the 400 left (240).
    assert over_threshold(budget70, 600, 800) and not over_threshold(dynamic, 600, 800)
    assert over_threshold(dynamic, 600, 841)
    half = Settings(budget_tokens=1000, split_threshold="dynamic", dynamic_trigger=0.5)
    assert over_threshold(half, 100, 551) and not over_threshold(half, 100, 550)


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"split_threshold": "sixty"}, "split_threshold"),
        ({"dynamic_trigger": 0.0}, "dynamic_trigger"),
        ({"dynamic_trigger": 1.5}, "dynamic_trigger"),
    ],
)
def test_bad_rules_are_refused_in_one_line(changes: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError) as refused:
        Settings(**changes)
    assert named in str(refused.value) and "\n" not in str(refused.value)


def conversation(turns: int) -> list[list[BaseMessage]]:
    words = "kyoto temple ryokan shrine train gion april osaka nara kimono matcha".split()
    out = []
    for i in range(turns):
        text = " ".join(words[(i + k) % len(words)] for k in range(25))
        out.append(
            [
                HumanMessage(f"Trip note {i}: {text}", id=f"u{i}"),
                AIMessage(f"Noted trip item {i}: {text}", id=f"a{i}"),
            ]
        )
    return out


def run(path: Path, rule: str) -> list[dict[str, Any]]:
    """The estimate record of each turn of one conversation under ``rule``."""
    embedder = HashEmbedder()
    settings = Settings(data_dir=path, budget_tokens=2000, split_threshold=rule)  # type: ignore[arg-type]
    records = []
    with TopicMemory(
        settings=settings, roles=native_roles(embedder, settings), embedder=embedder
    ) as memory:
        for messages in conversation(30):
            result = memory.run_turn("t", {"messages": messages, "mode": "import"})
            records.append(result["estimate"])
        assert memory.check("t").ok
    return records


def test_the_dynamic_rule_splits_earlier_and_records_what_was_available(tmp_path: Path) -> None:
    seed000 = run(tmp_path / "a", "budget70")
    seed001 = run(tmp_path / "b", "dynamic")
    for record in seed000:
        assert "available" not in record
        if record["split"]:
            assert record["share"] > 0.7
    for record in seed001:
        assert record["available"] == 2000 - record["system"]
        history = record["total"] - record["system"]
        if record["split"]:
            assert history > 0.6 * record["available"]
    first = [next(i for i, r in enumerate(rs) if r["split"]) for rs in (seed000, seed001)]
    assert first[1] < first[0]
    # Before either rule split, both saw the same window; the dynamic one acted below 70 %.
    assert seed001[first[1]]["share"] <= 0.7
