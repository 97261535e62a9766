"""Invariant 6 at the smallest budgets: every accepted budget holds the fixed part of the window.

Issue 41 saw windows of 463 tokens at a budget of 300 and 502 at 500: a recent message shortened
to nothing still carried the 15-token "shortened" mark, more than a short message itself. The
smallest accepted budget is now the one the instructions and the last 20 messages fit (each
shortened at most to a one-token mark), and a budget past any model's context is refused too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.cli.main import main
from langgraph_topics.datasets.locomo import load_locomo
from langgraph_topics.errors import InputError
from langgraph_topics.nodes.assemble import SHORT_TRUNCATION_MARK, assemble_window
from langgraph_topics.prompts.main_window import render_earlier, render_system_prompt
from langgraph_topics.settings import (
    FIXED_SYSTEM_TOKENS,
    MAX_BUDGET_TOKENS,
    MIN_BUDGET_TOKENS,
    SHORTENED_MESSAGE_TOKENS,
    check_run_settings,
    min_budget_tokens,
)
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.tokens.counting import (
    MESSAGE_OVERHEAD_TOKENS,
    default_token_counter,
    message_tokens,
)

LOCOMO = Path(__file__).parent / "data" / "locomo" / "conv-26.json"
COUNTER = default_token_counter()
WORDS = {
    "en": ["yes", "the", "Kyoto", "ryokan", "dividend", "starter", "sourdough", "ok"],
    "zh": ["好", "股票", "基本面", "京都", "旅馆", "酵母", "是的", "财务指标"],
}


def test_the_smallest_budget_holds_the_bundled_instructions_and_twenty_marks() -> None:
    assert COUNTER(SHORT_TRUNCATION_MARK) + MESSAGE_OVERHEAD_TOKENS <= SHORTENED_MESSAGE_TOKENS
    for language in ("en", "zh"):
        fixed = COUNTER(render_system_prompt([], language)) + COUNTER(render_earlier([], language))
        assert fixed <= FIXED_SYSTEM_TOKENS, (language, fixed)
    assert MIN_BUDGET_TOKENS == min_budget_tokens(20) == 250


def _conversation(language: str, sizes: list[int], named: bool) -> list[StoredMessage]:
    words = WORDS[language]
    messages: list[StoredMessage] = []
    for number, size in enumerate(sizes):
        text = " ".join(words[(number + k) % len(words)] for k in range(size))
        message: StoredMessage = {
            "id": f"m{number:03d}",
            "role": "user" if number % 2 == 0 else "assistant",
            "content": text,
            "timestamp": f"2024-05-{1 + number // 10:02d}T10:00:{number % 60:02d}",
        }
        if named:
            message["name"] = "Caroline" if number % 2 == 0 else "Melanie"
        messages.append(message)
    return messages


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    language=st.sampled_from(["en", "zh"]),
    sizes=st.lists(st.integers(min_value=0, max_value=120), min_size=1, max_size=45),
    extra=st.integers(min_value=0, max_value=400),
    alternate=st.booleans(),
    named=st.booleans(),
)
def test_every_window_at_an_accepted_budget_fits_it_and_keeps_the_last_20(
    language: str, sizes: list[int], extra: int, alternate: bool, named: bool
) -> None:
    budget = MIN_BUDGET_TOKENS + extra
    working = _conversation(language, sizes, named)
    window = assemble_window(
        working,
        {},
        [],
        {},
        budget=budget,
        keep_recent=20,
        reference_threshold=0.3,
        language=language,
        counter=COUNTER,
        alternate=alternate,
    )
    sent = COUNTER(window["system_prompt"]) + sum(
        message_tokens(m, COUNTER) for m in window["messages"]
    )
    assert window["tokens"] <= budget and sent <= budget, (window["tokens"], sent, budget)
    last = [m["id"] for m in working[-20:]]
    assert set(last) <= set(window["message_ids"])  # shortened, never dropped (invariant 2)


def test_a_short_message_is_never_made_longer_by_its_mark() -> None:
    working = _conversation("en", [1] * 20, named=False)
    window = assemble_window(
        working,
        {},
        [],
        {},
        budget=MIN_BUDGET_TOKENS,
        keep_recent=20,
        reference_threshold=0.3,
        language="en",
        counter=COUNTER,
    )
    for before, after in zip(working, window["messages"], strict=True):
        assert COUNTER(after["content"]) <= COUNTER(before["content"])


def _locomo_records(count: int) -> list[dict[str, Any]]:
    return load_locomo(LOCOMO)[0].messages[:count]


@pytest.mark.parametrize("budget", [250, 300, 500])
def test_a_locomo_conversation_at_small_budgets_stays_within_them_and_checks(
    tmp_path: Path, budget: int
) -> None:
    settings = Settings(data_dir=tmp_path / "d", budget_tokens=budget)
    with TopicMemory(settings=settings, embedder=HashEmbedder()) as memory:
        memory.import_messages("t", _locomo_records(70))
        for question in ("What did Caroline research?", "When did Melanie paint a sunrise?"):
            memory.chat("t", question)
            window = memory.state("t")["context"]
            assert window["tokens"] <= budget, window["sections"]
            report = memory.check("t")
            assert report.ok, report.findings
        asked = memory.context("t", "What is Caroline's identity?")["context"]
        assert asked["tokens"] <= budget


def test_a_budget_under_the_fixed_part_is_refused_for_its_keep_recent(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 250"):
        Settings(data_dir=tmp_path, budget_tokens=249)
    # Fewer recent messages, a smaller fixed part: the floor follows keep_recent.
    assert Settings(data_dir=tmp_path, budget_tokens=200, keep_recent=6).budget_tokens == 200
    with pytest.raises(ValueError, match="last 40 messages"):
        Settings(data_dir=tmp_path, budget_tokens=300, keep_recent=40)


@pytest.mark.parametrize("budget", [MAX_BUDGET_TOKENS + 1, 10**30])
def test_a_budget_past_any_model_is_refused_everywhere(tmp_path: Path, budget: int) -> None:
    with pytest.raises(ValueError, match="at most 100,000,000"):
        Settings(data_dir=tmp_path, budget_tokens=budget)
    with pytest.raises(InputError, match="topic_memory.budget_tokens=.*at most 100,000,000"):
        check_run_settings({"budget_tokens": budget})
    assert Settings(data_dir=tmp_path, budget_tokens=MAX_BUDGET_TOKENS).budget_tokens > 0


def test_the_cli_refuses_a_huge_budget_in_one_line_and_remembers_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "d"
    with pytest.raises(SystemExit) as stopped:
        main(["chat", "--data-dir", str(data_dir), "--budget", str(10**30)])
    assert stopped.value.code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and "at most 100,000,000 tokens" in lines[0], lines
    assert not data_dir.exists()
    # A hand-written cli.json holding one is refused the same way, naming the file.
    data_dir.mkdir()
    (data_dir / "cli.json").write_text(json.dumps({"budget": 10**30}), "utf-8")
    assert main(["topics", "--data-dir", str(data_dir)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cli.json: bad budget" in err[0] and "at most" in err[0], err
    assert sorted(p.name for p in data_dir.iterdir()) == ["cli.json"]
