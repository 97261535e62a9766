"""The fan-out memo: one list's windows wait for its first; other lists never wait for it."""

from __future__ import annotations

import threading

import pytest

from langgraph_topics.state.fan_out_memo import FanOutMemo
from langgraph_topics.state.records import StoredMessage


def _records(tag: str) -> list[StoredMessage]:
    return [{"id": f"{tag}{n}", "role": "user", "content": tag} for n in range(3)]  # type: ignore[typeddict-item]


def test_another_list_is_worked_out_while_one_is_in_progress() -> None:
    memo: FanOutMemo[str] = FanOutMemo()
    first, second = _records("a"), _records("b")
    owner = object()
    started, second_done = threading.Event(), threading.Event()
    results: list[str] = []

    def slow(records: tuple[StoredMessage, ...]) -> str:
        started.set()
        # Finishes only once the other list was worked out: a memo-wide lock would deadlock.
        assert second_done.wait(timeout=10)
        return "a"

    worker = threading.Thread(target=lambda: results.append(memo.get(first, (owner,), 0, slow)))
    worker.start()
    assert started.wait(timeout=10)
    assert memo.get(second, (owner,), 0, lambda records: "b") == "b"
    second_done.set()
    worker.join(timeout=10)
    assert results == ["a"]


def test_the_same_list_waits_for_its_first_and_is_worked_out_once() -> None:
    memo: FanOutMemo[int] = FanOutMemo()
    given = _records("a")
    owner = object()
    calls: list[int] = []
    gate = threading.Event()

    def work(records: tuple[StoredMessage, ...]) -> int:
        calls.append(1)
        gate.wait(timeout=10)
        return len(records)

    answers: list[int] = []
    threads = [
        threading.Thread(target=lambda: answers.append(memo.get(given, (owner,), 0, work)))
        for _ in range(5)
    ]
    for thread in threads:
        thread.start()
    gate.set()
    for thread in threads:
        thread.join(timeout=10)
    assert answers == [3] * 5
    assert calls == [1]


def test_a_failing_work_leaves_nothing_behind() -> None:
    memo: FanOutMemo[int] = FanOutMemo()
    given = _records("a")

    def failing(records: tuple[StoredMessage, ...]) -> int:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        memo.get(given, (), 0, failing)
    assert len(memo) == 0
    assert memo.get(given, (), 0, lambda records: 7) == 7
