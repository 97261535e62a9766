"""``bench cost``: the simulated provider's models, and one tiny run through the real client."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from langgraph_topics.bench.cost import CostConfig, parse_size, run_cost
from langgraph_topics.bench.cost_report import cost, cost_table, percentile
from langgraph_topics.bench.sim_provider import CacheModel, Latency, SimConfig, SimProvider
from langgraph_topics.cli.main import main
from langgraph_topics.roles.llm.splitter import parse_plan
from langgraph_topics.roles.llm.topic_window import parse_verdict

CONV_26 = Path(__file__).parent / "data" / "locomo" / "conv-26.json"
SMALL_CACHE = CacheModel(minimum=256, block=32)
"""Prompts of a tiny history are short; a smaller first block still shows the cache working."""


def test_the_latency_and_cache_models() -> None:
    assert Latency(0.7, 60.0, 0.05).seconds(4000, 30) == pytest.approx(0.7 + 0.5 + 0.2)
    model = CacheModel()
    assert [model.cached(n) for n in (500, 1023, 1024, 1151, 1152, 5000)] == [
        0,
        0,
        1024,
        1024,
        1152,
        4992,
    ]
    assert parse_size("24k") == 24_000 and parse_size("1m") == 1_000_000
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0 and percentile([1.0, 9.0], 0.99) == 9.0


def _request(text: str, *, marked: bool = False) -> dict[str, Any]:
    system: dict[str, Any] = {"role": "system", "content": text}
    if marked:
        system["content"] = [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]
    return {"model": "sim-strong", "messages": [system, {"role": "user", "content": "hello"}]}


def test_prefix_cache_automatic_and_explicit() -> None:
    long_text = "You are a careful assistant who answers briefly. " * 400
    with SimProvider(SimConfig(time_scale=0.0)) as provider:
        first = provider.answer(_request(long_text))
        second = provider.answer(_request(long_text))
        provider.answer(_request(long_text, marked=True))
    assert first["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    cached = second["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert cached >= 1024 and (cached - 1024) % 128 == 0
    assert cached <= second["usage"]["prompt_tokens"]
    # Only a request carrying a cache_control breakpoint is cached on the explicit sheet.
    assert [c.explicit_cached_tokens for c in provider.calls[:2]] == [0, 0]
    assert provider.calls[2].explicit_cached_tokens >= 1024
    assert provider.calls[0].tier == "strong"


def test_role_replies_parse_with_the_package_parsers() -> None:
    split_input = (
        '<topics>\n<topic id="topic-1" status="active"><name>Pottery class</name>'
        "<brief>pottery clay bowl class</brief></topic>\n</topics>\n<messages>\n"
        '<exchange n="1">\n<message id="a1" role="user">My pottery class made a clay bowl</message>'
        '\n<message id="a2" role="assistant">A clay bowl, lovely!</message>\n</exchange>\n'
        '<exchange n="2">\n<message id="b1" role="user">We adopted a puppy named Oscar</message>'
        "\n</exchange>\n</messages>"
    )
    with SimProvider(SimConfig(time_scale=0.0)) as provider:
        body: dict[str, Any] = {
            "model": "sim-strong",
            "messages": [
                {"role": "system", "content": "Output one <topic_split> element"},
                {"role": "user", "content": split_input},
            ],
        }
        reply = provider.answer(body)["choices"][0]["message"]["content"]
        plan = parse_plan(reply, ["a1", "a2", "b1"], {"topic-1"})
        window = {
            "model": "sim-cheap",
            "messages": [
                {"role": "system", "content": "Output one <topic_result> element"},
                {
                    "role": "user",
                    "content": '<split_messages>\n<message id="a1" role="user">My pottery '
                    "class made a clay bowl</message>\n</split_messages>\n<unsplit_messages>\n"
                    '<message id="q" role="user">What did the pottery class make?</message>\n'
                    "</unsplit_messages>",
                },
            ],
        }
        answer = provider.answer(window)["choices"][0]["message"]["content"]
        # A prompt asking for a summary (of a length) and a card gets them; numbered messages
        # are referenced by number.
        window["messages"][0]["content"] = (
            "Output one <topic_result> element; add a <summary>, at most about 40 characters, "
            "and a <card>"
        )
        window["messages"][1]["content"] = (
            '<split_messages>\n<m n="1" role="user">My pottery class made a clay bowl</m>\n'
            '</split_messages>\n<unsplit_messages>\n<m n="2" role="user">What did the pottery '
            "class make?</m>\n</unsplit_messages>"
        )
        summarised = provider.answer(window)["choices"][0]["message"]["content"]
    # A prompt that asks for runs of exchanges gets them (one assignment per run).
    runs_prompt = 'Output one <topic_split> element: <assignment exchanges="1-3" .../>'
    with SimProvider(SimConfig(time_scale=0.0)) as other:
        body["messages"][0]["content"] = runs_prompt
        runs = other.answer(body)["choices"][0]["message"]["content"]
    assert '<assignment exchanges="1" topic="existing_active" topic_id="topic-1"/>' in runs
    assert re.search(r'<assignment exchanges="2" topic="new" topic_name="[^"]+"><summary>', runs)
    assert "msg_id" not in runs
    destinations = {a["topic_id"]: a["message_ids"] for a in plan["assignments"]}
    assert destinations["topic-1"] == ["a1", "a2"]
    assert [t["name"] for t in plan["new_topics"]] and provider.calls[1].tier == "cheap"
    verdict, dropped = parse_verdict(answer, {"a1"})
    assert verdict["relevance_score"] >= 0.3 and verdict["referenced_message_ids"] == ["a1"]
    assert dropped == 0 and not verdict["summary"] and "card" not in verdict
    verdict, dropped = parse_verdict(summarised, {"1"}, citable_ids={"1", "2"})
    assert verdict["referenced_message_ids"] == ["1"] and dropped == 0
    assert 0 < len(verdict["summary"]) <= 40 and "card" in verdict


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    config = CostConfig(
        data=CONV_26,
        histories=[2000],
        budgets=[1000],
        turns=2,
        warmup=1,
        sim=SimConfig(time_scale=0.01, cache=SMALL_CACHE),
        work_dir=tmp_path_factory.mktemp("cost"),
    )
    return run_cost(config, lambda line: None)


def test_a_tiny_run_counts_every_role_and_the_baselines(report: dict[str, Any]) -> None:
    assert set(report) == {"config", "cases", "seconds"}
    (case,) = report["cases"]
    assert {"summary", "acceptance", "turns", "history_tokens", "import_s"} <= set(case)
    assert case["history_tokens"] >= 2000 and len(case["turns"]) == 3
    for turn in case["turns"]:
        memory = turn["memory"]
        roles = memory["roles"]
        # Every turn answers with the strong model and reads topics with the cheap one.
        assert roles["responder"]["calls"] >= 1 and roles["responder"]["tier"] == "strong"
        assert roles["topic_window"]["calls"] == len(memory["topic_window_scores"]) >= 1
        assert roles["topic_window"]["tier"] == "cheap"
        assert memory["calls"] == sum(r["calls"] for r in roles.values())
        assert memory["wall_s"] > 0 and memory["critical_path"]["waves"]
        assert memory["format_retries"] == 0, "a simulated reply was rejected"
        retrieval, full = turn["retrieval_only"], turn["full_context"]
        assert retrieval["calls"] == 1 and retrieval["roles"]["responder"]["tier"] == "strong"
        assert 0 < retrieval["input"] and retrieval["retrieved_messages"] > 0
        assert full["fits"] and full["calls"] == 1 and full["input"] > case["history_tokens"]
        # Both windows are scored on the question's labelled evidence (or None without any).
        for recall in (memory["evidence_recall"], retrieval["evidence_recall"]):
            assert recall is None or 0 <= recall <= 1
    second = case["turns"][1]
    assert second["memory"]["cached"] > 0, "the second turn re-reads topic prompts"
    # The topic prompts mark their stable prefix: a provider caching only at breakpoints
    # reads it too (through langchain-openai's own breakpoint field).
    window = second["memory"]["roles"]["topic_window"]
    assert 0 < window["explicit_cached"] <= window["cached"]
    assert second["full_context"]["cached"] > 0, "the history is the full context's prefix"
    summary = case["summary"]
    assert summary["memory"]["cost_auto"] <= summary["memory"]["cost_explicit"]
    assert "evidence_recall" in summary["memory"] and "evidence_recall" in summary["retrieval_only"]
    assert "recall memory/retrieval" in cost_table(report)
    measured = [t["full_context"] for t in case["turns"] if not t["warmup"]]
    mean_cost = sum(cost(f, "auto") for f in measured) / len(measured)
    assert summary["full_context"]["cost_auto"] == pytest.approx(mean_cost, abs=1e-5)
    names = [c["check"] for c in case["acceptance"]]
    assert "p50 / retrieval-only p50" in names and "topic windows in a turn (max)" in names
    # Every check is judged but the auto sheet's full-context ratio, which is only shown.
    assert all(
        isinstance(c["pass"], bool) == (c["check"] != "cost / full context (auto)")
        for c in case["acceptance"]
    )
    table = cost_table(report)
    assert "retrieval-only" in table and "latency model" in table
    json.dumps(report)


def test_the_command_prints_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(
        [
            "bench",
            "cost",
            str(CONV_26),
            "--history",
            "1200",
            "--budget",
            "900",
            "--turns",
            "1",
            "--warmup",
            "0",
            "--time-scale",
            "0.01",
            "--json",
            "--out",
            str(tmp_path),
        ]
    )
    assert status == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["config"]["latency_model"]["strong"]["base_s"] == 0.7
    assert printed["cases"][0]["summary"]["retrieval_only"]["p50_s"] > 0
    assert (tmp_path / "cost.json").is_file()
