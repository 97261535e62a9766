"""``TopicMemory.search`` and the ``search`` command: where a thread talked about something."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cli_runner import run_cli
from conversations import subject_records

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.errors import InputError

THREAD = "t"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A thread of four subjects (one a month from January 2024), split at a small budget."""
    root = tmp_path_factory.mktemp("search") / "data"
    settings = Settings(data_dir=root, budget_tokens=600, keep_recent=6)
    with TopicMemory(settings=settings) as memory:
        memory.import_messages(THREAD, subject_records(["kyoto", "sourdough", "stocks", "fitness"]))
    return root


@pytest.fixture
def memory(data_dir: Path) -> Iterator[TopicMemory]:
    with TopicMemory(settings=Settings(data_dir=data_dir, budget_tokens=600, keep_recent=6)) as m:
        yield m


def test_the_best_hit_is_the_message_that_answers_with_its_date_and_topic(
    memory: TopicMemory,
) -> None:
    hits = memory.search(THREAD, "Which ryokan near Gion did you suggest?")
    assert hits[0]["message_id"] in {"m006", "m007"}  # the ryokan question and its answer
    assert hits[0]["timestamp"] == "2024-01-13T10:00:03"
    assert hits[0]["topic_id"] is not None and hits[0]["topic_name"]
    assert 0.0 <= hits[-1]["relevance"] <= hits[0]["relevance"] <= 1.0
    assert len(hits) == 10
    chinese = memory.search(THREAD, "蛋白质一天吃多少", limit=3)
    assert chinese[0]["message_id"] in {"m028", "m029"} and len(chinese) == 3


def test_the_unsplit_messages_are_searched_too(memory: TopicMemory) -> None:
    working = {m.id for m in memory.graph.get_state(memory.run_config(THREAD)).values["messages"]}
    last = "练完之后肌肉酸痛还能继续练吗？"
    hit = memory.search(THREAD, last, limit=1)[0]
    assert hit["message_id"] == "m030" and hit["message_id"] in working
    assert hit["topic_id"] is None and hit["topic_name"] == ""


def test_dates_bound_the_hits(memory: TopicMemory) -> None:
    since = datetime(2024, 3, 1, tzinfo=UTC)
    hits = memory.search(THREAD, "sourdough starter feeding", since=since)
    assert hits and all((h["timestamp"] or "") >= "2024-03" for h in hits)
    assert not any(h["message_id"] in {f"m0{n:02d}" for n in range(8, 16)} for h in hits)
    february = memory.search(
        THREAD,
        "sourdough starter feeding",
        since=datetime(2024, 2, 1, tzinfo=UTC),
        until=datetime(2024, 2, 29, tzinfo=UTC),
    )
    assert {h["message_id"] for h in february} == {f"m0{n:02d}" for n in range(8, 16)}


def test_bad_requests_are_one_clear_error(memory: TopicMemory) -> None:
    with pytest.raises(InputError, match="no thread 'nobody'"):
        memory.search("nobody", "ryokan")
    with pytest.raises(InputError, match="limit must be positive"):
        memory.search(THREAD, "ryokan", limit=0)
    assert memory.search(THREAD, "   ") == []


def test_the_command_prints_a_table_or_json_and_refuses_a_bad_date(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["search", "--data-dir", str(data_dir), "--thread", THREAD]
    status, out, err = run_cli(capsys, *base, "ryokan", "near", "Gion", "--limit", "2", "--json")
    hits = json.loads(out)
    assert status == 0 and not err and len(hits) == 2
    assert set(hits[0]) == {
        "message_id",
        "topic_id",
        "topic_name",
        "role",
        "timestamp",
        "relevance",
        "snippet",
    }
    status, out, _ = run_cli(capsys, *base, "starter", "--until", "2024-02-11")
    assert status == 0 and "2024-02-11" in out and "2024-02-12" not in out
    assert "relevance" in out.splitlines()[0]
    status, out, err = run_cli(capsys, *base, "ryokan", "--since", "last week")
    assert status == 2 and not out
    assert err == [
        "langgraph-topics: error: --since 'last week': not an ISO-8601 date or time "
        "(e.g. 2030-01-01)"
    ]


def test_related_words_are_looked_for_and_named(
    memory: TopicMemory, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    related = memory.related_terms(THREAD, "starter")
    assert all(isinstance(word, str) and word for word in related)
    own = memory.search(THREAD, "starter feeding", expand=False)
    assert own and own[0]["message_id"] in {
        h["message_id"] for h in memory.search(THREAD, "starter feeding")
    }
    with pytest.raises(InputError, match="no thread 'nobody'"):
        memory.related_terms("nobody", "starter")
    base = ["search", "--data-dir", str(data_dir), "--thread", THREAD, "starter", "--limit", "3"]
    status, out, err = run_cli(capsys, *base, "--no-related")
    assert status == 0 and not err and "also looked for" not in out
    status, out, err = run_cli(capsys, *base)
    assert status == 0 and not err
    assert ("also looked for" in out) == bool(related)
