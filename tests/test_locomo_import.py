"""Importing LoCoMo conv-26 (about 420 turns) at a 4,000-token budget."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import DATA

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.checks import CheckReport, check_context
from langgraph_topics.datasets import load_locomo
from langgraph_topics.state.working_set import stored_view
from langgraph_topics.subtopics.families import prior_families
from langgraph_topics.tokens import message_tokens

BUDGET = 4000


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TopicMemory, list[int]]]:
    conversation = load_locomo(DATA / "locomo" / "conv-26.json")[0]
    data_dir: Path = tmp_path_factory.mktemp("conv26")
    settings = Settings(data_dir=data_dir, budget_tokens=BUDGET)
    memory = TopicMemory(settings=settings)
    working_sizes: list[int] = []
    counter = memory.services.token_counter

    def sample(done: int) -> None:
        working = stored_view(memory.state("conv-26")["messages"])
        working_sizes.append(sum(message_tokens(m, counter) for m in working))

    memory.import_messages("conv-26", conversation.messages, progress=sample)
    yield memory, working_sizes
    memory.close()


def test_import_yields_several_topics_and_invariants_hold(
    imported: tuple[TopicMemory, list[int]],
) -> None:
    memory, _ = imported
    topics = memory.topics("conv-26")
    assert len(topics) >= 3
    assert sum(t["message_count"] for t in topics) > 300
    report = memory.check("conv-26")
    assert report.ok, report.findings
    assert report.counts["total"] == 419
    transcript_ids = {m["id"] for m in memory.transcript("conv-26")}
    assert len(transcript_ids) == 419


def test_no_topic_holds_more_than_a_quarter_of_the_conversation(
    imported: tuple[TopicMemory, list[int]],
) -> None:
    # The native splitter keeps conv-26's chit-chat in 3 topics; subtopics divide them.
    memory, _ = imported
    topics = memory.topics("conv-26")
    assert len([t for t in topics if t["status"] != "split"]) >= 5
    assert max(t["message_count"] for t in topics) <= 419 / 4


def test_checkpointed_messages_stay_bounded(imported: tuple[TopicMemory, list[int]]) -> None:
    memory, sizes = imported
    assert len(sizes) > 150  # one sample per imported turn
    # After every turn the working set fits in 70 % of the budget (the split keeps it there),
    # however long the imported history already is.
    assert max(sizes) <= 0.7 * BUDGET
    assert len(memory.state("conv-26")["messages"]) < 80


def test_context_queries_never_exceed_the_budget(imported: tuple[TopicMemory, list[int]]) -> None:
    memory, _ = imported
    conversation = load_locomo(DATA / "locomo" / "conv-26.json")[0]
    before = memory.state("conv-26")
    working_ids = [m.id for m in before["messages"]]
    families = prior_families(before["topics"])
    questions = [q for q in conversation.questions if q.category in (1, 2, 3, 4)][::6]
    assert len(questions) >= 20
    referenced = 0
    for question in questions:
        report = memory.context("conv-26", question.question)
        window = report["context"]
        assert window["tokens"] <= BUDGET
        check = CheckReport()
        results = {r["topic_id"]: r for r in report["topic_results"]}
        expected_recent = [*working_ids, window["recent_ids"][-1]][-20:]
        check_context(check, window, expected_recent, results, families)
        assert check.ok, check.findings
        referenced += len(window["referenced_messages"])
    assert referenced > 0, "topic results bring split messages back into the window"
    # Context queries change nothing stored.
    after = memory.state("conv-26")
    assert [m.id for m in after["messages"]] == working_ids
    assert after["total_messages"] == before["total_messages"]
    assert memory.check("conv-26").ok
