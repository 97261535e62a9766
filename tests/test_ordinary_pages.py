"""Ordinary pages: the index allocates its large arrays without numpy's huge-page advice.

The advice is numpy's process-wide switch; these tests check that it is off inside the scope
(nested and from several threads at once), back to what it was after, and off while an index
is opened and while its vectors are converted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.retrieval import message_index, ordinary_pages
from langgraph_topics.retrieval.message_index import MessageIndex
from langgraph_topics.retrieval.ordinary_pages import ordinary_pages as pages
from langgraph_topics.state.records import StoredMessage

_core = getattr(np, "_core", None) or np.core
advised: Callable[[], bool] = _core.multiarray._get_madvise_hugepage


@pytest.fixture(autouse=True)
def advice_on() -> Iterator[None]:
    """Each test starts with the advice on (numpy's default on Linux) and leaves it as found."""
    before = _core.multiarray._set_madvise_hugepage(True)
    yield
    _core.multiarray._set_madvise_hugepage(before)


def test_the_advice_is_off_inside_and_restored_after() -> None:
    with pages():
        assert not advised()
        with pages():
            assert not advised()
        assert not advised()  # the outer scope still holds it
    assert advised()


def test_the_advice_is_left_off_when_it_was_off() -> None:
    _core.multiarray._set_madvise_hugepage(False)
    with pages():
        assert not advised()
    assert not advised()


def test_overlapping_scopes_of_several_threads_restore_the_advice_once_all_left() -> None:
    inside = threading.Barrier(4)
    leave = [threading.Event() for _ in range(4)]
    seen: list[bool] = []

    def scope(number: int) -> None:
        with pages():
            inside.wait()
            leave[number].wait()
            seen.append(advised())

    threads = [threading.Thread(target=scope, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for number, thread in enumerate(threads):  # they leave in turn, the first first
        leave[number].set()
        thread.join()
        assert advised() == (number == 3)
    assert seen == [False] * 4


def test_without_numpy_s_switch_the_scope_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ordinary_pages, "_SET_ADVICE", None)
    with pages():
        assert advised()


def _messages(count: int) -> list[StoredMessage]:
    return [
        {"id": f"m{n}", "role": "user", "content": f"message {n} about topic {n % 7}"}
        for n in range(count)
    ]


def test_an_index_is_opened_and_converted_without_the_advice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(message_index, "LARGE_INDEX", 50)  # opened large: float16, converted
    embedder = HashEmbedder(32)
    index = MessageIndex(tmp_path, embedder)
    index.add(_messages(60), ["t"] * 60)
    index.snapshot()  # the projection fitted and saved
    during: dict[str, bool] = {}
    load, widen = MessageIndex._load, MessageIndex._widen

    def spied_load(self: MessageIndex) -> None:
        during["open"] = advised()
        load(self)

    def spied_widen(self: MessageIndex, half: np.ndarray) -> None:
        real_empty = np.empty

        def empty(*args: object, **kwargs: object) -> np.ndarray:
            during["conversion"] = advised()
            return real_empty(*args, **kwargs)  # type: ignore[call-overload, no-any-return]

        monkeypatch.setattr(np, "empty", empty)
        try:
            widen(self, half)
        finally:
            monkeypatch.setattr(np, "empty", real_empty)

    monkeypatch.setattr(MessageIndex, "_load", spied_load)
    monkeypatch.setattr(MessageIndex, "_widen", spied_widen)
    reopened = MessageIndex(tmp_path, embedder)
    assert reopened.vectors().dtype == np.float16
    reopened.widen()
    assert reopened.widened.wait(timeout=30)
    assert during == {"open": False, "conversion": False}
    assert advised()
    assert reopened.vectors().dtype == np.float32
