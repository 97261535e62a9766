"""A fan-out's windows share one turn's evidence; a split, another list or family reads anew."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from langgraph_topics.retrieval import turn_evidence as memo
from langgraph_topics.retrieval.turn_evidence import turn_evidence
from langgraph_topics.state.fan_out_memo import FanOutMemo
from langgraph_topics.state.records import StoredMessage

_TOKENS = itertools.count()


class Index:
    def __init__(self) -> None:
        self.token = next(_TOKENS)
        self.rows: list[str] = []

    def __len__(self) -> int:
        return len(self.rows)


class Store:
    def __init__(self) -> None:
        self.held: dict[str, str] = {}
        self.asked = 0

    def locate(self, message_id: str) -> str | None:
        self.asked += 1
        return self.held.get(message_id)

    def locate_many(self, message_ids: Iterable[str]) -> dict[str, str]:
        found = {i: self.locate(i) for i in message_ids}
        return {i: topic for i, topic in found.items() if topic is not None}


class Scorer:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str], dict[str, str]]] = []

    def score(
        self,
        index: Index,
        query: str,
        unsplit: Sequence[StoredMessage],
        families: Mapping[str, str] | None = None,
        *,
        periods: Sequence[object] = (),
    ) -> object:
        self.calls.append((query, [m["id"] for m in unsplit], dict(families or {})))
        return SimpleNamespace(query=query, unsplit=[m["id"] for m in unsplit])


def _setup() -> tuple[Any, Any, Scorer, Store, Index]:
    scorer, store, index = Scorer(), Store(), Index()
    services = SimpleNamespace(scorer=scorer, clock=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    stores = SimpleNamespace(topic_store=store, message_index=index)
    return services, stores, scorer, store, index


def _working(count: int) -> list[StoredMessage]:
    return [{"id": f"m{n}", "role": "user", "content": f"question {n}"} for n in range(count)]


def test_one_list_is_scored_once_for_every_window() -> None:
    services, stores, scorer, store, _ = _setup()
    working = _working(5)
    first = turn_evidence(services, stores, working, {})
    for _ in range(9):
        assert turn_evidence(services, stores, working, {}) is first
    assert len(scorer.calls) == 1 and store.asked == 5


def test_the_fan_outs_families_map_is_scored_once_for_every_window() -> None:
    services, stores, scorer, _, _ = _setup()
    working = _working(5)
    families = {f"t{n}": "t0" for n in range(1, 300)}  # a long thread's subtopics
    first = turn_evidence(services, stores, working, families)
    for _ in range(9):
        assert turn_evidence(services, stores, working, families) is first
    assert len(scorer.calls) == 1 and scorer.calls[0][2] == families


def test_a_split_another_list_or_other_families_are_scored_anew() -> None:
    services, stores, scorer, store, index = _setup()
    working = _working(5)
    turn_evidence(services, stores, working, {})
    # A split in between (never within a fan-out): the index grew and the store holds some.
    store.held.update({"m0": "t1", "m1": "t1"})
    index.rows += ["m0", "m1"]
    split: Any = turn_evidence(services, stores, working, {})
    assert split.unsplit == ["m2", "m3", "m4"]
    assert len(scorer.calls) == 2
    assert turn_evidence(services, stores, list(working), {}) is not split  # another list
    turn_evidence(services, stores, working, {"t2": "t1"})
    assert scorer.calls[-1][2] == {"t2": "t1"}
    working.append({"id": "m5", "role": "user", "content": "and now?"})  # changed in place
    assert turn_evidence(services, stores, working, {"t2": "t1"}).query == "and now?"
    index.token = next(_TOKENS)  # the index rewritten (a review)
    turn_evidence(services, stores, working, {"t2": "t1"})
    assert len(scorer.calls) == 6


def test_another_branch_store_is_scored_anew() -> None:
    services, stores, scorer, _, _ = _setup()
    working = _working(3)
    turn_evidence(services, stores, working, {})
    fork: Any = SimpleNamespace(topic_store=Store(), message_index=stores.message_index)
    turn_evidence(services, fork, working, {})
    assert len(scorer.calls) == 2


def test_the_memo_stays_bounded(monkeypatch: Any) -> None:
    monkeypatch.setattr(memo, "MEMO", FanOutMemo(entries=2))
    services, stores, scorer, _, _ = _setup()
    lists = [_working(n + 1) for n in range(5)]
    for working in lists:
        turn_evidence(services, stores, working, {})
        assert len(memo.MEMO) <= 2
