"""``bench agent``: the three agents on one conversation, measured where the model sees it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langgraph_topics.bench.agent import (
    AgentBenchConfig,
    Fact,
    agent_table,
    run_agent_bench,
    system_prompt,
)
from langgraph_topics.cli.main import main
from langgraph_topics.tokens.counting import default_token_counter

FACT = Fact(3, 40, "By the way, my locker code is 4917.", "What was my locker code?", "4917")


def test_a_small_run_measures_every_agent_on_the_same_conversation() -> None:
    config = AgentBenchConfig(
        turns=45,
        budget=2000,
        system_tokens=1431,
        embedder="hash",
        facts=(FACT,),
        messages=400,
        tail_turns=6,
    )
    report = run_agent_bench(config, lambda line: None)
    rows = {row["variant"]: row for row in report["rows"]}
    assert list(rows) == ["topic-memory", "summarization", "none"]
    assert report["config"]["system_prompt_tokens"] == 1431
    tool_turns = sum(1 for t in range(45) if t % 7 == 0)
    for row in rows.values():
        # The same conversation for each: one call per turn, one more per tool round.
        assert row["model_calls"] == 45 + tool_turns
        assert row["pairing_problems"] == 0
        assert row["cpu_ms_median"] > 0
    memory = rows["topic-memory"]
    # Every request within the budget, the agent's prompt and tool schemas counted.
    assert memory["over_budget"] == 0 and memory["tokens_max"] <= 2000
    assert memory["tokens_median"] > 1431
    assert memory["memory_check_ok"]
    # No middleware sends the whole history: past the budget within 45 turns, and it quotes.
    assert rows["none"]["tokens_max"] > 2000 and rows["none"]["recall"] == {"4917": True}
    assert set(memory["recall"]) == {"4917"}
    # The long thread in the same run: its history, then the turns, the first fact asked last.
    long = {row["variant"]: row for row in report["long_rows"]}
    assert list(long) == ["topic-memory", "summarization", "none"]
    assert all(row["model_calls"] == 6 + 1 for row in long.values())  # turn 203 calls a tool
    assert long["topic-memory"]["over_budget"] == 0 and long["topic-memory"]["memory_check_ok"]
    assert set(long["topic-memory"]["recall"]) == {"4917"}
    checks = report["checks"]
    assert checks["turns: every call within the budget"] and checks["long thread: tool pairing"]
    assert "cpu over none" in " ".join(checks)
    table = agent_table(report)
    assert "400-message thread + 6 turns" in table and "issue 34 checks" in table


def test_the_system_prompt_has_the_asked_size() -> None:
    counter = default_token_counter()
    assert counter(system_prompt(1431, counter)) == 1431


def test_the_cli_writes_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "bench", "agent", "--turns", "8", "--embedder", "hash", "--budget", "2000",
            "--messages", "0", "--json", "--out", str(tmp_path),
        ]
    )  # fmt: skip
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert [row["variant"] for row in printed["rows"]] == ["topic-memory", "summarization", "none"]
    assert json.loads((tmp_path / "agent.json").read_text("utf-8"))["rows"]


def test_a_bad_setting_is_one_line() -> None:
    with pytest.raises(
        SystemExit, match="bench agent: turns, tool_every and budget must be positive"
    ):
        main(["bench", "agent", "--turns", "5", "--embedder", "hash", "--tool-every", "0"])
