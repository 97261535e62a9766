"""The command line: demo, chat on a pipe, import, context, topics, check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conversations import subject_records

from langgraph_topics.cli.main import EXAMPLES, main

CLI = [sys.executable, "-m", "langgraph_topics.cli.main"]


def _run(
    *args: str, stdin: str | None = None, timeout: int = 180
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def test_demo_runs_offline_and_shows_the_lifecycle() -> None:
    done = _run("demo")
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "cold start" in out
    for shown in ("split  :", "topic_created", "activated", "recall_cue", "dormant:", "woken  :"):
        assert shown in out, f"the demo should show {shown}"
    assert "check  : all invariants hold" in out


def test_demo_json_is_one_object_a_turn_then_the_check() -> None:
    done = _run("demo", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    records = [json.loads(line) for line in done.stdout.splitlines()]
    turns, last = records[:-1], records[-1]
    assert [r["turn"] for r in turns] == list(range(1, len(turns) + 1)) and len(turns) > 30
    assert all(r["reply"] and r["user"] for r in turns)
    assert any(r["woken"] for r in turns) and any(r["events"] for r in turns)
    assert last["check"]["ok"] and last["topics"]


def test_import_context_topics_check(tmp_path: Path) -> None:
    data = ["--data-dir", str(tmp_path / "d"), "--thread", "bob"]
    records = subject_records(["stocks", "kyoto", "sourdough", "fitness", "stocks"])
    path = tmp_path / "conversation.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records), "utf-8")

    done = _run("import", str(path), *data, "--budget", "900")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "imported 40 messages" in done.stdout

    topics = json.loads(_run("topics", *data, "--json").stdout)
    assert topics and {"id", "name", "status", "message_count"} <= set(topics[0])
    assert sum(t["message_count"] for t in topics) > 0
    table = _run("topics", *data).stdout
    assert "status" in table and topics[0]["id"] in table

    context = json.loads(_run("context", "Which ryokan near Gion?", *data, "--json").stdout)
    assert {"message_ids", "tokens", "budget", "topics"} <= set(context)
    assert context["budget"] == 900 and context["tokens"] <= 900  # the budget was remembered
    assert all({"id", "score"} <= set(t) for t in context["topics"])
    scores = [t["score"] for t in context["topics"]]
    assert scores == sorted(scores, reverse=True)
    assert "activate_topic" in context["system_prompt"]  # the instructions (zh or en)
    assert "prompt" not in context  # only with --show-prompt

    question = "Which ryokan near Gion?"
    shown = json.loads(_run("context", question, *data, "--json", "--show-prompt").stdout)
    prompt = shown["prompt"]
    assert prompt[0] == {"role": "system", "content": shown["system_prompt"]}
    assert [m["id"] for m in prompt[1:]] == [m["id"] for m in shown["messages"]]
    assert prompt[-1]["role"] == "user" and prompt[-1]["content"] == question
    assert "Gion Hatanaka" in shown["system_prompt"]  # the quoted ryokan answer is recalled

    text = _run("context", question, *data, "--show-prompt").stdout
    assert text.startswith("=== system ===\n" + shown["system_prompt"] + "\n")
    assert text.count("\n=== ") == len(prompt) - 1
    assert text.rstrip().endswith(f"===\n{question}")

    check = _run("check", *data, "--json")
    assert check.returncode == 0 and json.loads(check.stdout)["ok"] is True


def test_check_exits_1_when_an_invariant_is_broken(tmp_path: Path) -> None:
    data_dir = tmp_path / "d"
    records = subject_records(["stocks", "kyoto", "sourdough"])
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records), "utf-8")
    assert _run("import", str(path), "--data-dir", str(data_dir), "--budget", "800").returncode == 0
    # Copy a stored message line by hand: the same id is now in two places of the branch.
    topic_file = next((data_dir / "threads").glob("*/topics/*.jsonl"))
    line = next(x for x in topic_file.read_text("utf-8").splitlines() if '"message"' in x)
    with topic_file.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")
    done = _run("check", "--data-dir", str(data_dir))
    assert done.returncode == 1
    assert "INVARIANT BROKEN" in done.stdout
    assert f"{topic_file.name}:" in done.stdout  # the damage is named by file and line


def test_chat_reads_piped_lines_and_ends_at_eof(tmp_path: Path) -> None:
    done = _run(
        "chat",
        "--data-dir",
        str(tmp_path / "d"),
        "--thread",
        "pipe",
        stdin="hello there\n\nwhat about Kyoto temples?\n",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    replies = [line for line in done.stdout.splitlines() if line.strip()]
    assert len(replies) == 2
    check = _run("check", "--data-dir", str(tmp_path / "d"), "--thread", "pipe", "--json")
    assert json.loads(check.stdout)["counts"]["total"] == 4


def _commands() -> list[list[str]]:
    commands = [["demo"], ["chat"], ["import"], ["context"], ["topics"], ["transcript"], ["check"]]
    commands += [["forget"]]
    commands += [["review"], ["archive"], ["restore"], ["archived"], ["themes"], ["trace"]]
    kinds = ("recall", "embedders", "overhead", "search", "fanout", "history-cost", "scope")
    bench = [["bench", kind] for kind in kinds]
    return [[], *commands, ["bench"], *bench]


@pytest.mark.parametrize("command", _commands(), ids=lambda c: " ".join(c) or "top")
def test_every_help_shows_examples(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main([*command, "--help"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    prog = " ".join(["langgraph-topics", *command])
    assert f"usage: {prog}" in out
    assert "\nexamples:\n" in out
    examples = out.split("\nexamples:\n", 1)[1].splitlines()
    assert examples[0].startswith(f"  {prog}") or not command  # an example of this command
    assert EXAMPLES[prog].strip("\n") in out  # laid out as written, not re-wrapped


def test_help_examples_name_real_options() -> None:
    """Every --option an example uses exists on the parser of the command it runs."""
    from langgraph_topics.cli.main import build_parser

    parser = build_parser()
    for text in EXAMPLES.values():
        joined = text.replace("\\\n", " ")  # continuation lines
        for line in joined.splitlines():
            line = line.split("  #", 1)[0].strip()
            if "langgraph-topics " not in line or line.startswith("Run "):
                continue
            args = line.split("langgraph-topics ", 1)[1].split()
            sub = parser
            for word in args:
                action = next((a for a in sub._actions if isinstance(a.choices, dict)), None)
                if action is None or word not in action.choices:
                    break
                sub = action.choices[word]
            known = {o for a in sub._actions for o in a.option_strings}
            options = {w for w in args if w.startswith("--")}
            assert sub is not parser, line
            assert options <= known, f"{line}: {options - known} unknown"
