"""The history view extended by new refined turns, and kept on disk (issue 38)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conversations import subject_records
from history_threads import DATABASE_THREAD, thread_records

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.datasets.locomo import conversation_messages
from langgraph_topics.history import view as history_view_module
from langgraph_topics.history.refined_turns import HISTORY_DIR, RefinedTurn
from langgraph_topics.history.units import (
    exchange_vectors,
    extend_buckets,
    make_units,
    ordered_turns,
)
from langgraph_topics.history.view import build_state, extend_state, refined_log
from langgraph_topics.history.view_cache import (
    VIEW_CACHE_FILE,
    ViewState,
    read_view_state,
    turn_signature,
)
from langgraph_topics.retrieval.message_index import MessageIndex
from langgraph_topics.services import thread_directory

DATA = Path(__file__).parent / "data"
MEMORYBANK = Path(__file__).parent.parent / "benchmarks" / "data" / "memorybank-cn"


def _settings(root: Path) -> Settings:
    return Settings(data_dir=root, budget_tokens=600, keep_recent=6)


def _constructed() -> list[Any]:
    """Four subjects a month each, then the same again in the other order."""
    order = ["stocks", "kyoto", "sourdough", "fitness"]
    later = subject_records(order[::-1], prefix="b")
    for record in later:  # months 5 to 8
        month = int(record["timestamp"][5:7]) + len(order)
        record["timestamp"] = f"2024-{month:02d}{record['timestamp'][7:]}"
    return subject_records(order, prefix="a") + later


def _memorybank() -> list[Any]:
    samples = json.loads((MEMORYBANK / "memorybank-cn-dev.json").read_text("utf-8"))
    return conversation_messages(next(s for s in samples if s["sample_id"] == "mb-cn-04"))[0]


def _locomo() -> list[Any]:
    conversation = json.loads((DATA / "locomo" / "conv-26.json").read_text("utf-8"))
    if isinstance(conversation, list):
        conversation = conversation[0]
    return conversation_messages(conversation)[0][:240]  # its first sessions


THREADS: dict[str, Callable[[], list[Any]]] = {
    "constructed": _constructed,
    "memorybank": _memorybank,
    "locomo": _locomo,
}


@dataclass
class Recorded:
    """A thread's recorded refined turns, in order, and what the units are made from."""

    turns: list[RefinedTurn]
    topic_of: dict[str, str]
    index: MessageIndex

    def signatures(self, count: int) -> list[str]:
        return [
            turn_signature(r["key"], self.topic_of[r["key"]], len(r["ids"]), r.get("time"))
            for r in self.turns[:count]
        ]

    def state(self, count: int) -> ViewState:
        return build_state(self.turns[:count], self.signatures(count), self.topic_of, self.index)

    def extended(self, known: ViewState) -> ViewState:
        count = len(self.turns)
        return extend_state(known, self.turns, self.signatures(count), self.topic_of, self.index)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Recorded]:
    """Each thread imported and reviewed (its refined turns recorded)."""
    found: dict[str, Recorded] = {}
    for name, messages in THREADS.items():
        memory = TopicMemory(settings=_settings(tmp_path_factory.mktemp(name) / "data"))
        memory.import_messages(name, messages())
        memory.review(name)
        stores = memory.services.stores(name)
        located = stores.topic_store.message_ids()
        records = refined_log(stores).records()
        turns = ordered_turns([r for r in records if any(i in located for i in r["ids"])])
        topic_of = {r["key"]: located.get(r["key"], r["topic"]) for r in turns}
        found[name] = Recorded(turns, topic_of, stores.message_index)
        memory.close()
    return found


def _units(state: ViewState, turns: Sequence[RefinedTurn]) -> list[tuple[Any, ...]]:
    return [
        (
            tuple(turns[p]["key"] for p in unit.turns),
            dict(unit.counts),
            unit.headline,
            unit.kind,
            unit.start,
            unit.end,
            unit.topics,
        )
        for unit in state.units
    ]


@pytest.mark.parametrize("thread", THREADS)
@pytest.mark.parametrize("share", [0.5, 0.8])
def test_extended_units_are_those_of_all_the_turns_grouped_at_once(
    recorded: dict[str, Recorded], thread: str, share: float
) -> None:
    """Where the algorithm allows it, an extension is exactly a grouping of all the turns.

    A grouping from nothing centres the exchanges' directions on the mean of all of them;
    an extension keeps the mean of when it was first made. On that mean, the units (and the
    themes found from them) are the same, exchange for exchange.
    """
    data = recorded[thread]
    first = data.state(int(len(data.turns) * share))
    extended = data.extended(first)
    stored = data.index.stored_vectors([i for r in data.turns for i in r["ids"]])
    vectors = exchange_vectors(data.turns, stored, first.centre)
    grouped = make_units(data.turns, vectors, data.topic_of)
    assert len(extended.units) > len(first.units) - 1 >= 1
    assert _units(extended, data.turns) == [
        (tuple(data.turns[p]["key"] for p in u.turns), dict(u.counts), u.headline, u.kind)
        + (u.start, u.end, u.topics)
        for u in grouped
    ]
    # Each unit in one bucket; the new ones sorted by the same rule against the same centres.
    assert sorted(i for b in extended.buckets for i in b) == list(range(len(extended.units)))
    assert all(extended.units[i].bucket == n for n, b in enumerate(extended.buckets) for i in b)
    buckets, _ = extend_buckets(grouped, [], None, 0)
    same = sum(extended.units[i].bucket == grouped[i].bucket for i in range(len(first.units) - 1))
    assert same == len(first.units) - 1  # the units sorted before keep their buckets
    assert len(extended.buckets) >= len(first.buckets) - 1 and buckets


@pytest.mark.parametrize("thread", THREADS)
def test_an_extension_is_as_good_as_a_computation_from_nothing(
    recorded: dict[str, Recorded], thread: str
) -> None:
    """Against the thread's mean now, most units are the same and the main themes too."""
    data = recorded[thread]
    whole = data.state(len(data.turns))
    extended = data.extended(data.state(int(len(data.turns) * 0.7)))
    units = {u[0] for u in _units(whole, data.turns)}
    shared = units & {u[0] for u in _units(extended, data.turns)}
    assert len(shared) >= 0.85 * len(units), (len(shared), len(units))
    main = {t.name for t in whole.themes[:8]}
    assert len(main & {t.name for t in extended.themes[:8]}) >= 0.75 * len(main)
    if thread == "memorybank":  # the recurring subject is still one theme, over several days
        carrying = [t for t in extended.themes if "健身" in t.keywords]
        assert len(carrying) == 1
        days = {(extended.units[u].start or "")[:10] for u in carrying[0].units}
        assert len(days) >= 2


# ------------------------------------------------------------------------ the disk cache


def _cache(root: Path, thread: str) -> Path:
    return thread_directory(root, thread) / HISTORY_DIR / VIEW_CACHE_FILE


class Calls:
    """Counts the view's computations from nothing and its extensions."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.built = self.extended = 0
        build, extend = history_view_module.build_state, history_view_module.extend_state

        def counted_build(*args: Any) -> ViewState:
            self.built += 1
            return build(*args)

        def counted_extend(*args: Any) -> ViewState:
            self.extended += 1
            return extend(*args)

        monkeypatch.setattr(history_view_module, "build_state", counted_build)
        monkeypatch.setattr(history_view_module, "extend_state", counted_extend)


def test_a_new_process_reads_the_view_back_and_extends_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    records = _constructed()
    with TopicMemory(settings=_settings(root)) as memory:
        memory.import_messages("t", records[:-20])
        memory.review("t")
        first = memory.themes("t")
    cache = _cache(root, "t")
    made = read_view_state(cache)
    assert first and made.units and made.signatures
    written = cache.read_bytes()
    calls = Calls(monkeypatch)
    # This small thread grows by more than half: allowed to, so that it is extended.
    monkeypatch.setattr(history_view_module, "REBUILD_GROWTH", 10.0)
    with TopicMemory(settings=_settings(root)) as memory:
        assert memory.themes("t") == first
        # Read back: nothing computed again (the unsplit exchanges extend it in memory).
        assert calls.built == 0 and cache.read_bytes() == written
        memory.import_messages("t", records[-20:])
        memory.review("t")
        extensions = calls.extended
        memory.themes("t")
    assert calls.built == 0 and calls.extended > extensions
    grown = read_view_state(cache)
    assert grown.signatures[: len(made.signatures)] == made.signatures
    assert len(grown.signatures) > len(made.signatures)
    assert grown.centre is not None and made.centre is not None
    assert (grown.centre == made.centre).all() and grown.anchor == made.anchor
    # Derived data only: without the file the same themes are computed from the records.
    cache.unlink()
    with TopicMemory(settings=_settings(root)) as memory:
        assert memory.themes("t")
    assert calls.built == 1 and read_view_state(cache).signatures == grown.signatures


def _flipped(data: bytes, place: int) -> bytes:
    return data[:place] + bytes([data[place] ^ 0xFF]) + data[place + 1 :]


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # torn
        lambda data: _flipped(data, len(data) // 2),  # a byte changed
        lambda data: b"not a cache\n",
        lambda data: data.replace(b'"format": 1', b'"format": 99', 1),
    ],
    ids=["torn", "changed", "garbage", "other-format"],
)
def test_a_damaged_cache_is_rebuilt_with_one_warning_and_checked_as_rebuildable(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: Callable[[bytes], bytes]
) -> None:
    root = tmp_path / "data"
    with TopicMemory(settings=_settings(root)) as memory:
        memory.import_messages("db", thread_records(DATABASE_THREAD))
        first = memory.themes("db")
    cache = _cache(root, "db")
    cache.write_bytes(damage(cache.read_bytes()))
    with TopicMemory(settings=_settings(root)) as memory:
        report = memory.check("db")
        assert report.ok, report.findings
        noted = [f for f in report.findings if VIEW_CACHE_FILE in f]
        assert len(noted) == 1 and "rebuilt" in noted[0] and "lost" not in noted[0]
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert memory.themes("db") == first
            assert memory.trace("db", "Postgres") is not None
    warned = [r for r in caplog.records if VIEW_CACHE_FILE in r.getMessage()]
    assert len(warned) == 1, [r.getMessage() for r in caplog.records]
    assert read_view_state(cache).units  # written again, sound
    with TopicMemory(settings=_settings(root)) as memory:
        assert not [f for f in memory.check("db").findings if VIEW_CACHE_FILE in f]


def test_a_cache_of_other_turns_is_rebuilt_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "data"
    with TopicMemory(settings=_settings(root)) as memory:
        memory.import_messages("db", thread_records(DATABASE_THREAD))
        memory.import_messages("other", _constructed())
        expected = memory.themes("db")
        memory.themes("other")
    _cache(root, "db").write_bytes(_cache(root, "other").read_bytes())  # sound, but stale
    with TopicMemory(settings=_settings(root)) as memory:
        assert not [f for f in memory.check("db").findings if VIEW_CACHE_FILE in f]
        with caplog.at_level(logging.WARNING):
            assert memory.themes("db") == expected
    warned = [r for r in caplog.records if "other refined turns" in r.getMessage()]
    assert len(warned) == 1


def test_turns_grown_by_half_again_are_grouped_again_around_their_mean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    records = _constructed()
    with TopicMemory(settings=_settings(root)) as memory:
        memory.import_messages("t", records[:-20])
        memory.review("t")
        memory.themes("t")
        made = read_view_state(_cache(root, "t"))
        memory.import_messages("t", records[-20:])
        memory.review("t")
        calls = Calls(monkeypatch)
        memory.themes("t")
    grown = read_view_state(_cache(root, "t"))
    assert len(grown.signatures) > history_view_module.REBUILD_GROWTH * len(made.signatures)
    assert calls.built == 1 and grown.anchor == len(grown.signatures)
    assert grown.centre is not None and made.centre is not None
    assert not (grown.centre == made.centre).all()
