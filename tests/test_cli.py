"""The command line: demo, chat on a pipe, import, context, topics, check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conversations import subject_records

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
    for shown in ("split  :", "topic_created", "activated", "recall_cue", "dormant"):
        assert shown in out, f"the demo should show {shown}"
    assert "check  : all invariants hold" in out


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
