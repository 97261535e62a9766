"""The topic-file catalog: opening with it answers exactly as parsing every line would.

A catalog (``topics/<topic_id>.catalog``) caches what opening the store derives from a topic file
up to a byte offset; the store then parses only the lines after it. These tests open the same
files with catalogs and without (a copy without them), under branch filters too, with damaged
lines, duplicates, odd records and torn tails, and check that the answers and the warnings are
the same; and that a catalog that no longer describes its file is ignored and rebuilt.
"""

from __future__ import annotations

import itertools
import json
import logging
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores import topic_catalog, topic_store
from langgraph_topics.stores.seq_ranges import SeqRanges
from langgraph_topics.stores.topic_audit import audit_topic_files
from langgraph_topics.stores.topic_catalog import CATALOG_SUFFIX, catalog_path
from langgraph_topics.stores.topic_store import JsonlTopicStore

RUNS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
NEVER = 1 << 40
"""A catalog threshold that is never reached: opening parses and writes no catalog."""
LOGGER = "langgraph_topics.stores"
NOW = "2024-06-01T00:00:00+00:00"


def msg(message_id: str, content: str = "hello", **extra: object) -> StoredMessage:
    message: dict[str, object] = {"id": message_id, "role": "user", "content": content}
    message.update(extra)
    return message  # type: ignore[return-value]


@contextmanager
def catalog_every(size: int) -> Iterator[None]:
    """Stores write a topic file's catalog once ``size`` bytes are uncatalogued."""
    with mock.patch.object(JsonlTopicStore, "CATALOG_REFRESH_BYTES", size):
        yield


@contextmanager
def warnings_of(root: Path) -> Iterator[list[str]]:
    """The store's warnings while the block runs, with ``root`` taken out of them."""
    found: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            found.append(record.getMessage().replace(str(root), "ROOT"))

    handler = Collect(logging.WARNING)
    logger = logging.getLogger(LOGGER)
    logger.addHandler(handler)
    try:
        yield found
    finally:
        logger.removeHandler(handler)


def without_catalog_lines(warnings: list[str]) -> Counter[str]:
    return Counter(w for w in warnings if CATALOG_SUFFIX not in w)


def snapshot(store: JsonlTopicStore) -> dict[str, Any]:
    """Everything a store answers from its index (and the messages, read lazily)."""
    topics = store.topic_ids()
    return {
        "topics": topics,
        "metas": {t: store.meta(t) for t in topics},
        "locations": store.message_ids(),
        "days": store.time_index(),
        "links": {t: store.links(t) for t in topics},
        "next_seq": store._next_seq,
        "visible": store.visible_ranges(),
        "messages": {t: store.messages(t) for t in topics},
    }


def copy_without_catalogs(root: Path, target: Path) -> Path:
    shutil.copytree(root, target, ignore=shutil.ignore_patterns(f"*{CATALOG_SUFFIX}"))
    return target


def catalogs(root: Path) -> list[Path]:
    return sorted((root / "topics").glob(f"*{CATALOG_SUFFIX}"))


def catalogued_offsets(root: Path) -> dict[str, int]:
    """Where opening ``root`` starts parsing each topic file (0: it reads the whole file)."""
    starts: dict[str, int] = {}
    real = topic_store._parse_file

    def spy(path: Path, **kwargs: Any) -> Any:
        if path.suffix == ".jsonl" and path.parent.name == "topics":
            starts[path.stem] = kwargs.get("start", 0)
        return real(path, **kwargs)

    with mock.patch.object(topic_store, "_parse_file", spy):
        JsonlTopicStore(root)
    return starts


# ------------------------------------------------------------------------ generated files


def _record_line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


LINE_KINDS = [
    "message",
    "message",
    "message",
    "message",
    "duplicate",
    "malformed",
    "odd stored_at",
    "no seq",
    "bool seq",
    "brief",
    "brief with card",
    "unknown type",
    "unreadable",
    "blank",
    "second header",
]


@st.composite
def topic_files(draw: st.DrawFn) -> dict[str, list[bytes]]:
    """Topic files, line by line: mostly what the store writes, with every oddity it skips."""
    seqs = itertools.count()
    ids: list[str] = []

    def seq() -> int:
        if draw(st.integers(0, 9)) == 0:  # now and then out of order
            return draw(st.integers(0, 60))
        return next(seqs)

    def stamp() -> dict[str, Any]:
        choice = draw(st.sampled_from(["none", "day", "day", "offset", "invalid"]))
        day = draw(st.integers(1, 4))
        return {
            "none": {},
            "day": {"timestamp": f"2024-05-0{day}T10:00:00+00:00"},
            "offset": {"timestamp": f"2024-05-0{day}T23:30:00-05:00"},
            "invalid": {"timestamp": "yesterday"},
        }[choice]

    files: dict[str, list[bytes]] = {}
    for number in range(draw(st.integers(1, 3))):
        topic_id = f"topic-{number:08x}"
        stored_at = f"2024-05-0{draw(st.integers(1, 4))}T08:00:00+00:00"
        header = {
            "type": "topic",
            "seq": seq(),
            "id": topic_id,
            "name": f"name {number}",
            "brief": f"brief {number}",
            "parent_id": None,
            "created_at": draw(st.sampled_from(["2024-05-01T00:00:00+00:00", "", "later"])),
        }
        opening = draw(st.sampled_from(["header", "header", "header", "none", "damaged", "other"]))
        lines: list[bytes] = []
        if opening == "header":
            lines.append(_record_line(header))
        elif opening == "damaged":
            lines.append(_record_line(header)[:20] + b"\n")
        elif opening == "other":
            lines.append(_record_line({**header, "id": "topic-elsewhere"}))
        for _ in range(draw(st.integers(0, 14))):
            kind = draw(st.sampled_from(LINE_KINDS))
            if draw(st.integers(0, 4)) == 0:
                stored_at = f"2024-05-0{draw(st.integers(1, 4))}T08:00:00+00:00"
            message_id = f"m{len(ids)}"
            message = {"type": "message", "seq": seq(), "stored_at": stored_at}
            if kind == "message":
                ids.append(message_id)
                lines.append(_record_line({**message, **msg(message_id), **stamp()}))
            elif kind == "duplicate" and ids:
                lines.append(_record_line({**message, **msg(draw(st.sampled_from(ids)))}))
            elif kind == "malformed":
                lines.append(_record_line({**message, "id": message_id, "content": 5}))
            elif kind == "odd stored_at":
                ids.append(message_id)
                odd = draw(st.sampled_from([None, 7, "", "absent"]))
                record = {**message, **msg(message_id), **stamp(), "stored_at": odd}
                if odd == "absent":
                    del record["stored_at"]
                lines.append(_record_line(record))
            elif kind in ("no seq", "bool seq"):
                ids.append(message_id)
                record = {**message, **msg(message_id)}
                if kind == "no seq":
                    del record["seq"]
                else:
                    record["seq"] = True
                lines.append(_record_line(record))
            elif kind.startswith("brief"):
                brief: dict[str, Any] = {
                    "type": "brief",
                    "seq": seq(),
                    "name": f"renamed {len(lines)}",
                    "brief": f"brief line {len(lines)}",
                    "updated_at": stored_at,
                }
                if kind == "brief with card":
                    brief["card"] = {"topics": ["x"], "decisions": []}
                lines.append(_record_line(brief))
            elif kind == "unknown type":
                lines.append(_record_line({"type": "note", "seq": seq(), "text": "?"}))
            elif kind == "unreadable":
                lines.append(b'{"type": "message", "id": "broken", "cont\n')
            elif kind == "blank":
                lines.append(b"\n")
            elif kind == "second header":
                lines.append(_record_line({**header, "seq": seq(), "name": "again"}))
        files[topic_id] = lines
    return files


def write_files(root: Path, files: dict[str, list[bytes]], upto: dict[str, int]) -> None:
    """Write (append) each file's lines ``[written so far, upto[...])``."""
    directory = root / "topics"
    directory.mkdir(parents=True, exist_ok=True)
    for topic_id, lines in files.items():
        path = directory / f"{topic_id}.jsonl"
        done = len(path.read_bytes().split(b"\n")) - 1 if path.exists() else 0
        with path.open("ab") as handle:
            handle.write(b"".join(lines[done : upto[topic_id]]))


ENDINGS = ["", "", "torn", "unterminated"]
"""How the last line of a file may end: whole, half written, or complete but without newline."""


def end_files(root: Path, files: dict[str, list[bytes]], ending: str) -> None:
    for topic_id in files:
        path = root / "topics" / f"{topic_id}.jsonl"
        with path.open("ab") as handle:
            if ending == "torn":
                handle.write(b'{"type": "message", "seq": 99, "id": "half", "con')
            elif ending == "unterminated":
                record = {"type": "message", "seq": 98, "id": f"last-{topic_id}", "content": "x"}
                handle.write(json.dumps(record).encode())


ranges_strategy = st.lists(
    st.tuples(st.integers(0, 40), st.integers(0, 12)).map(lambda p: [p[0], p[0] + p[1]]),
    max_size=3,
)


def compare(root: Path, scratch: Path, visible: SeqRanges | None) -> None:
    """Open ``root`` (with its catalogs) and a copy without them: same answers, same warnings."""
    bare = copy_without_catalogs(root, scratch / f"bare-{len(list(scratch.iterdir()))}")
    # A header without a creation time is dated when it is read: the same "now" for both.
    with catalog_every(NEVER), mock.patch.object(topic_store, "_now", return_value=NOW):
        with warnings_of(bare) as plain_warnings:
            plain = snapshot(JsonlTopicStore(bare, visible=visible))
        with warnings_of(root) as cached_warnings:
            cached = snapshot(JsonlTopicStore(root, visible=visible))
    assert cached == plain
    assert without_catalog_lines(cached_warnings) == without_catalog_lines(plain_warnings)


GROWN_FILES = {
    "files": topic_files(),
    "cuts": st.lists(st.floats(0, 1), min_size=3, max_size=3),
    "ending": st.sampled_from(ENDINGS),
    "branches": st.lists(ranges_strategy, max_size=2),
}
"""Topic files, where to cut each, how the last line ends, branches to read them on."""


def grow_files(
    root: Path,
    files: dict[str, list[bytes]],
    cuts: list[float],
    ending: str,
    read_prefix: Callable[[], object],
) -> None:
    """Write a prefix of each file, ``read_prefix`` (which caches it), then the rest.

    The rest as another process appends it, which perhaps died in its last write.
    """
    prefix = {t: int(len(lines) * cuts[n % 3]) for n, (t, lines) in enumerate(files.items())}
    write_files(root, files, prefix)
    read_prefix()
    write_files(root, files, {t: len(lines) for t, lines in files.items()})
    end_files(root, files, ending)


def open_cataloguing(root: Path) -> None:
    """Open a store on ``root`` that catalogs every file it parses."""
    with catalog_every(0):
        JsonlTopicStore(root)


@RUNS
@given(**GROWN_FILES)
def test_opening_with_catalogs_answers_as_parsing_every_line(
    files: dict[str, list[bytes]], cuts: list[float], ending: str, branches: list[SeqRanges]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root, scratch = Path(tmp) / "thread", Path(tmp) / "scratch"
        scratch.mkdir()
        # The catalog covers a prefix of each file (written when the store opened it there).
        grow_files(root, files, cuts, ending, lambda: open_cataloguing(root))
        for visible in [None, *branches]:
            compare(root, scratch, visible)
        # Reopened with a catalog covering everything: the same again.
        open_cataloguing(root)
        sizes = {t: (root / "topics" / f"{t}.jsonl").stat().st_size for t in files}
        assert all(offset > 0 for t, offset in catalogued_offsets(root).items() if sizes[t])
        for visible in [None, *branches]:
            compare(root, scratch, visible)


@RUNS
@given(files=topic_files(), branches=st.lists(ranges_strategy, max_size=2))
def test_indexing_a_block_at_once_equals_indexing_line_by_line(
    files: dict[str, list[bytes]], branches: list[SeqRanges]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_files(root, files, {t: len(lines) for t, lines in files.items()})
        for visible in [None, *branches]:
            with (
                mock.patch.object(topic_store, "_now", return_value=NOW),
                warnings_of(root) as fast_warnings,
            ):
                fast = snapshot(JsonlTopicStore(root, visible=visible))
            with (
                mock.patch.object(topic_store, "_now", return_value=NOW),
                mock.patch.object(JsonlTopicStore, "_index_block_at_once", return_value=False),
                warnings_of(root) as slow_warnings,
            ):
                slow = snapshot(JsonlTopicStore(root, visible=visible))
            assert fast == slow
            assert fast_warnings == slow_warnings


# ------------------------------------------------------------------ written through the API


def build(root: Path, every: int = 600) -> tuple[JsonlTopicStore, list[str]]:
    """A store with two topics, briefs with cards and a link, catalogued as it grew."""
    with catalog_every(every):
        store = JsonlTopicStore(root)
        first = store.create_topic("Stocks", "valuation", created_at="2024-05-01T10:00:00+00:00")
        second = store.create_topic("Kyoto", "travel", created_at="2024-05-02T10:00:00+00:00")
        for n in range(12):
            topic = first if n % 3 else second
            stamp = f"2024-05-{1 + n // 4:02d}T12:00:00+09:00"
            store.append(topic["id"], [msg(f"m{n}a", f"text {n}", timestamp=stamp), msg(f"m{n}b")])
            if n % 4 == 3:
                card: Any = {"text": f"card {n}"}  # kept verbatim: any JSON object
                store.set_brief(topic["id"], f"name {n}", f"brief {n}", card=card)
        store.link(first["id"], second["id"], "related")
    return store, [first["id"], second["id"]]


def test_appends_write_the_catalog_and_a_reopen_parses_only_the_rest(tmp_path: Path) -> None:
    store, topics = build(tmp_path)
    assert [path.stem for path in catalogs(tmp_path)] == sorted(topics)
    offsets = catalogued_offsets(tmp_path)
    assert all(0 < offsets[t] <= store.file_path(t).stat().st_size for t in topics)
    reopened = JsonlTopicStore(tmp_path)
    assert snapshot(reopened) == snapshot(store)
    assert dict(reopened.meta(topics[0])["brief_card"]) == {"text": "card 11"}


def test_below_the_threshold_no_catalog_is_written(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("t", "")
    store.append(topic["id"], [msg("m1"), msg("m2")])
    JsonlTopicStore(tmp_path)
    assert catalogs(tmp_path) == []


def test_opening_a_long_uncatalogued_file_writes_its_catalog(tmp_path: Path) -> None:
    store, topics = build(tmp_path, every=NEVER)
    assert catalogs(tmp_path) == []
    with catalog_every(100):
        JsonlTopicStore(tmp_path)
    assert [path.stem for path in catalogs(tmp_path)] == sorted(topics)
    assert snapshot(JsonlTopicStore(tmp_path)) == snapshot(store)


def test_a_branch_sees_the_same_through_the_catalog(tmp_path: Path) -> None:
    store, topics = build(tmp_path)
    ranges = [(0, 9), (15, 30)]
    expected = snapshot(
        JsonlTopicStore(copy_without_catalogs(tmp_path, tmp_path / "bare"), visible=ranges)
    )
    assert snapshot(store.on_branch(ranges)) == expected
    assert expected["locations"] != store.message_ids()  # the branch really sees less


def test_the_tail_another_store_appended_is_read(tmp_path: Path) -> None:
    store, topics = build(tmp_path)
    other = JsonlTopicStore(tmp_path)
    other.append(topics[1], [msg("late", "appended elsewhere")])
    other.set_brief(topics[1], "later name", "later brief")
    # The first store, unaware, passes the threshold: its catalog includes the other's lines.
    with catalog_every(10):
        store.append(topics[1], [msg("mine")])
    reopened = JsonlTopicStore(tmp_path)
    assert reopened.locate("late") == reopened.locate("mine") == topics[1]
    assert reopened.meta(topics[1])["name"] == "later name"
    compare(tmp_path, tmp_path.parent, None)


@pytest.mark.parametrize(
    "damage",
    ["garbage", "cut short", "empty", "not an object", "other version", "foreign", "bad columns"],
)
def test_an_unusable_catalog_is_ignored_with_one_line_and_rebuilt(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    store, topics = build(tmp_path)
    expected = snapshot(store)
    path = catalog_path(store.file_path(topics[0]))
    raw = path.read_bytes()
    document = json.loads(raw)
    if damage == "garbage":
        path.write_bytes(b"\x00\xff" * 40)
    elif damage == "cut short":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "not an object":
        path.write_text("[1, 2, 3]")
    elif damage == "other version":
        path.write_text(json.dumps({**document, "version": 999}))
    elif damage == "foreign":
        shutil.copyfile(catalog_path(store.file_path(topics[1])), path)
    elif damage == "bad columns":
        path.write_text(json.dumps({**document, "ids": document["ids"][:-1]}))

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        reopened = JsonlTopicStore(tmp_path)
    lines = [r.getMessage() for r in caplog.records if path.name in r.getMessage()]
    assert len(lines) == 1 and "ignored" in lines[0]
    assert snapshot(reopened) == expected
    # Rebuilt: the next open uses it again, silently.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert snapshot(JsonlTopicStore(tmp_path)) == expected
    assert caplog.records == []
    assert catalogued_offsets(tmp_path)[topics[0]] == store.file_path(topics[0]).stat().st_size


@pytest.mark.parametrize("change", ["truncated", "rewritten at the end", "rewritten at the start"])
def test_a_topic_file_changed_below_the_catalog_invalidates_it(
    tmp_path: Path, change: str, caplog: pytest.LogCaptureFixture
) -> None:
    store, topics = build(tmp_path)
    with catalog_every(0):  # catalogued to the end
        JsonlTopicStore(tmp_path)
    path = store.file_path(topics[0])
    raw = path.read_bytes()
    if change == "truncated":  # the last line gone
        raw = raw[: raw.rstrip(b"\n").rfind(b"\n") + 1]
    elif change == "rewritten at the end":  # same length, another id
        raw = raw.replace(b'"m11b"', b'"m99b"')
    else:
        raw = raw.replace(b'"Stocks"', b'"Stacks"')
    path.write_bytes(raw)
    bare = copy_without_catalogs(tmp_path, tmp_path / "bare")

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        reopened = snapshot(JsonlTopicStore(tmp_path))
    about_catalog = [r.getMessage() for r in caplog.records if CATALOG_SUFFIX in r.getMessage()]
    reason = "is shorter than" if change == "truncated" else "no longer starts with"
    assert len(about_catalog) == 1 and reason in about_catalog[0], about_catalog
    assert reopened == snapshot(JsonlTopicStore(bare))
    if change == "rewritten at the end":
        assert "m99b" in reopened["locations"] and "m11b" not in reopened["locations"]


def test_a_torn_last_line_after_the_catalog_is_still_repaired(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store, topics = build(tmp_path)
    path = store.file_path(topics[0])
    intact = path.read_bytes()
    with path.open("ab") as handle:
        handle.write(b'{"type": "message", "seq": 999, "id": "torn", "cont')
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        reopened = JsonlTopicStore(tmp_path)
    assert "torn" in caplog.text and CATALOG_SUFFIX not in caplog.text
    assert path.read_bytes() == intact
    assert reopened.locate("torn") is None
    assert catalogued_offsets(tmp_path)[topics[0]] > 0  # the catalog stayed good
    reopened.append(topics[0], [msg("after")])
    assert JsonlTopicStore(tmp_path).locate("after") == topics[0]


def test_appends_rewrite_the_catalog_once_per_threshold_not_per_append(tmp_path: Path) -> None:
    writes: list[int] = []
    real = topic_catalog.write_catalog

    def counting(path: Path, catalog: Any) -> None:
        writes.append(catalog.covered_bytes)
        real(path, catalog)

    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("t", "")
    with catalog_every(1000), mock.patch.object(topic_store, "write_catalog", counting):
        for n in range(100):
            store.append(topic["id"], [msg(f"m{n}", "x" * 40)])
    size = store.file_path(topic["id"]).stat().st_size
    assert size // 2000 <= len(writes) <= size // 1000
    assert all(later - earlier > 1000 for earlier, later in itertools.pairwise(writes))


def test_a_catalog_that_cannot_be_written_costs_nothing_but_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("t", "")
    catalog_path(store.file_path(topic["id"])).mkdir()  # nothing can replace a directory
    ids = [f"m{n}" for n in range(20)]
    with catalog_every(300), caplog.at_level(logging.WARNING, logger=LOGGER):
        for message_id in ids:
            store.append(topic["id"], [msg(message_id)])
    failures = [r for r in caplog.records if "could not write its catalog" in r.getMessage()]
    # Tried again only after another 300 bytes, not on every append.
    assert 1 <= len(failures) <= store.file_path(topic["id"]).stat().st_size // 300
    assert [m["id"] for m in store.messages(topic["id"])] == ids
    assert JsonlTopicStore(tmp_path).message_ids() == dict.fromkeys(ids, topic["id"])


def test_the_audit_reads_topic_files_only(tmp_path: Path) -> None:
    store, topics = build(tmp_path)
    audit = audit_topic_files(tmp_path, None)
    assert set(audit.branch) == set(store.message_ids())
    assert not audit.damaged and not audit.torn and not audit.duplicates()
