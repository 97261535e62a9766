"""The history layer (issue 38): refined turns, units, themes, ``trace``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runner import run_cli
from history_threads import DATABASE_THREAD, LEDGER_THREAD, thread_records

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.datasets.locomo import conversation_messages
from langgraph_topics.errors import InputError
from langgraph_topics.history.refined_turns import HISTORY_DIR, REFINED_FILE, RefinedTurnLog
from langgraph_topics.history.states import state_signals
from langgraph_topics.history.terms import names_a_thing
from langgraph_topics.services import thread_directory
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.viz.theme_timeline import theme_timeline_mermaid

THREAD = "db"
MEMORYBANK = Path(__file__).parent.parent / "benchmarks" / "data" / "memorybank-cn"
LOCOMO = Path(__file__).parent / "data" / "locomo"


def _settings(root: Path) -> Settings:
    return Settings(data_dir=root, budget_tokens=600, keep_recent=6)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The database decision (Postgres → SQLite → Postgres) among other talk, split offline."""
    root = tmp_path_factory.mktemp("themes") / "data"
    with TopicMemory(settings=_settings(root)) as memory:
        memory.import_messages(THREAD, thread_records(DATABASE_THREAD))
    return root


@pytest.fixture
def memory(data_dir: Path) -> Iterator[TopicMemory]:
    with TopicMemory(settings=_settings(data_dir)) as opened:
        yield opened


def _refined(data_dir: Path, thread: str = THREAD) -> Path:
    return thread_directory(data_dir, thread) / HISTORY_DIR / REFINED_FILE


def test_trace_gives_the_three_states_in_time_order_with_their_messages(
    memory: TopicMemory,
) -> None:
    trace = memory.trace(THREAD, "Postgres")
    assert trace is not None and trace["theme"] == "Postgres" and trace["matched_by"] == "theme"
    states = [(s["kind"], s["object"]) for s in trace["states"]]
    assert states == [("chose", "Postgres"), ("switched", "SQLite"), ("switched", "Postgres")]
    assert [s["message_ids"] for s in trace["states"]] == [
        ["d001", "d002"],
        ["d009", "d010"],
        ["d015", "d016"],
    ]
    times = [s["time"] or "" for s in trace["states"]]
    assert times == sorted(times) and times[0] == "2024-03-01T10:00:00"
    assert all(s["message_id"] in s["message_ids"] for s in trace["states"])
    assert "Let's switch to SQLite" in trace["states"][1]["quote"]["text"]
    assert trace["current"] == "Postgres"
    timeline = trace["timeline"]
    assert [e["mark"] for e in timeline][0] == "first" and timeline[-1]["mark"] == "last"
    quoted = {q["message_id"] for e in timeline for q in e["quotes"]}
    assert quoted and all(q["text"] for e in timeline for q in e["quotes"])
    assert "d005" not in {i for e in timeline for i in e["message_ids"]}  # sourdough is not in it


def test_a_decision_changed_twice_in_chinese_traces_as_three_states(tmp_path: Path) -> None:
    with TopicMemory(settings=_settings(tmp_path / "data")) as memory:
        memory.import_messages("zh", thread_records(LEDGER_THREAD))
        trace = memory.trace("zh", "记账小程序")
    assert trace is not None and trace["theme"] == "MySQL"
    assert [(s["kind"], s["object"], s["message_ids"]) for s in trace["states"]] == [
        ("chose", "MySQL", ["d001", "d002"]),
        ("switched", "SQLite", ["d005", "d006"]),
        ("switched", "MySQL", ["d009", "d010"]),
    ]


def test_a_query_naming_no_theme_finds_it_through_the_messages(memory: TopicMemory) -> None:
    trace = memory.trace(THREAD, "which storage engine did the warehouses need")
    assert trace is not None and trace["theme"] == "Postgres"
    assert memory.trace(THREAD, "   ") is None


def test_themes_lists_the_recurring_subjects(memory: TopicMemory) -> None:
    themes = {t["theme"]: t for t in memory.themes(THREAD)}
    assert {"Postgres", "sourdough"} <= set(themes)
    database = themes["Postgres"]
    assert database["first"] == "2024-03-01T10:00:00" and (database["last"] or "") >= "2024-03-20"
    assert database["states"] == 3 and database["current"] == "Postgres"
    assert "SQLite" in database["keywords"]
    with pytest.raises(InputError, match="no thread 'nobody'"):
        memory.themes("nobody")
    with pytest.raises(InputError, match="no thread 'nobody'"):
        memory.trace("nobody", "Postgres")


def test_refined_turns_are_written_by_the_review_once_per_exchange(
    memory: TopicMemory, data_dir: Path
) -> None:
    path = _refined(data_dir)
    memory.review(THREAD)  # off every turn: a split records nothing (bench agent: 4-5 ms a call)
    lines = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    located = memory.services.stores(THREAD).topic_store.message_ids()
    assert lines and all(i in located for r in lines for i in r["ids"])
    ids = [i for r in lines for i in r["ids"]]
    assert len(ids) == len(set(ids)) == len(located)  # every split message, each once
    first = next(r for r in lines if r["key"] == "d001")
    assert first["ids"] == ["d001", "d002"] and first["time"] == "2024-03-01T10:00:00"
    assert "Postgres" in first["keywords"] and first["summary"]
    assert first["states"][0]["kind"] == "chose"
    # A split made again after a crash records nothing twice.
    log = RefinedTurnLog(path.parent)
    messages = memory.services.stores(THREAD).topic_store.get_messages(["d001", "d002"])
    size = path.stat().st_size
    assert log.add([messages["d001"], messages["d002"]], ["any", "any"]) == 0
    assert path.stat().st_size == size


def test_messages_split_before_the_layer_are_recorded_on_first_use(tmp_path: Path) -> None:
    root = tmp_path / "data"
    with TopicMemory(settings=_settings(root)) as memory:
        memory.import_messages(THREAD, thread_records(DATABASE_THREAD))
    path = _refined(root)
    assert not path.exists()  # split, not reviewed yet: no refined turn
    with TopicMemory(settings=_settings(root)) as memory:
        assert memory.themes(THREAD)
        split = memory.services.stores(THREAD).topic_store.message_ids()
    recorded = [i for line in path.read_text("utf-8").splitlines() for i in json.loads(line)["ids"]]
    assert sorted(recorded) == sorted(split)


def test_check_notes_a_torn_line_and_fails_a_record_pointing_nowhere(tmp_path: Path) -> None:
    root = tmp_path / "data"
    with TopicMemory(settings=_settings(root)) as memory:
        memory.import_messages(THREAD, thread_records(DATABASE_THREAD))
        memory.review(THREAD)
    path = _refined(root)
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"key": "d0')  # an append a crash cut short
    with TopicMemory(settings=_settings(root)) as memory:
        report = memory.check(THREAD)
        assert report.ok, report.findings
        assert any("torn last line" in f and REFINED_FILE in f for f in report.findings)
        trace = memory.trace(THREAD, "Postgres")
        assert trace is not None and len(trace["states"]) == 3
    ghost = {"key": "zz1", "ids": ["zz1"], "summary": "", "keywords": [], "states": []}
    path.write_bytes(whole + json.dumps(ghost).encode() + b"\n")
    with TopicMemory(settings=_settings(root)) as memory:
        report = memory.check(THREAD)
    assert not report.ok
    assert any("held nowhere" in f and "zz1" in f for f in report.findings)


def test_the_commands_print_tables_json_and_a_mermaid_timeline(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--data-dir", str(data_dir), "--thread", THREAD]
    status, out, err = run_cli(capsys, "themes", *base)
    assert status == 0 and not err
    assert out.splitlines()[0].split()[:3] == ["theme", "first", "last"] and "Postgres" in out
    status, out, err = run_cli(capsys, "trace", *base, "Postgres", "--json")
    assert status == 0 and not err and json.loads(out)["current"] == "Postgres"
    picture = tmp_path / "postgres.mmd"
    status, out, err = run_cli(capsys, "trace", *base, "Postgres", "--map", str(picture))
    assert status == 0 and not err
    assert "chose Postgres → switched to SQLite → switched to Postgres" in out
    assert picture.read_text("utf-8").startswith("timeline\n    title Postgres\n")
    status, out, err = run_cli(capsys, "trace", *base, "quantum", "chromodynamics")
    assert status == 0 and out.startswith("nothing in the thread matches")
    status, out, err = run_cli(capsys, "themes", "--data-dir", str(data_dir), "--thread", "nope")
    assert status == 2 and not out and len(err) == 1 and "nope" in err[0]


def test_the_mermaid_timeline_lists_each_state_on_its_day(memory: TopicMemory) -> None:
    trace = memory.trace(THREAD, "Postgres")
    assert trace is not None
    text = theme_timeline_mermaid(trace)
    assert "2024-03-01 : first mention : chose Postgres" in text
    assert "2024-03-10 : switched to SQLite" in text
    assert "2024-03-20 : last mention : switched to Postgres" in text


@pytest.mark.parametrize(
    ("sample", "subject"),
    [("mb-cn-04", "健身"), ("mb-cn-07", "射击")],
)
def test_a_memorybank_subject_recurring_over_days_is_one_theme(
    tmp_path: Path, sample: str, subject: str
) -> None:
    samples = json.loads((MEMORYBANK / "memorybank-cn-dev.json").read_text("utf-8"))
    messages, _, _ = conversation_messages(next(s for s in samples if s["sample_id"] == sample))
    with TopicMemory(settings=_settings(tmp_path / "data")) as memory:
        memory.import_messages(sample, messages)
        themes = memory.themes(sample)
        carrying = [t for t in themes if subject in t["keywords"]]
        assert len(carrying) == 1, [t["keywords"] for t in themes]
        trace = memory.trace(sample, subject)
    assert trace is not None and trace["theme_id"] == carrying[0]["theme_id"]
    days = {(entry["start"] or "")[:10] for entry in trace["timeline"]}
    assert len(days) >= 2  # one theme over several days, not one a day
    quoted = [q["text"] for e in trace["timeline"] for q in e["quotes"]]
    assert sum(subject in text for text in quoted) >= 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("We'll use Postgres for the database.", [("chose", "Postgres")]),
        ("Deploying is painful. Let's switch to SQLite for now.", [("switched", "SQLite")]),
        ("We're going back to Postgres after all.", [("switched", "Postgres")]),
        ("We dropped Redis from the stack.", [("dropped", "Redis")]),
        ("Should we switch to SQLite?", []),
        ("You could switch to SQLite.", []),
        ("我们决定用 Postgres 做数据库。", [("chose", "Postgres")]),
        ("还是改用SQLite吧。", [("switched", "SQLite")]),
        ("我放弃了健身计划", [("dropped", "健身计划")]),
        ("要不要换成 SQLite？", []),
        ("不用谢", []),
    ],
)
def test_changes_of_state_are_read_in_english_and_chinese(
    text: str, expected: list[tuple[str, str]]
) -> None:
    assert [(s["kind"], s["object"]) for s in state_signals("m1", text)] == expected


def test_records_a_crash_left_before_the_checkpoint_are_not_doubled(tmp_path: Path) -> None:
    """A split appends its refined turns, then dies before its checkpoint: split again later."""
    root = tmp_path / "data"
    with TopicMemory(settings=_settings(root)) as memory:
        memory.import_messages(THREAD, thread_records(DATABASE_THREAD))
        stores = memory.services.stores(THREAD)
        held = stores.topic_store.message_ids()
        unsplit = [
            m
            for m in memory.transcript(THREAD)
            if m["id"] not in held and m["role"] in ("user", "assistant")
        ]
        assert unsplit and stores.refined_turns is not None
        stores.refined_turns.add(unsplit, ["t-gone"] * len(unsplit))  # the dead split's lines
        report = memory.check(THREAD)
        assert report.ok, report.findings
        more = thread_records(DATABASE_THREAD[2:4] * 6, prefix="e")
        for number, record in enumerate(more):
            record["timestamp"] = f"2024-04-{1 + number // 2:02d}T09:00:0{number % 2}"
        memory.import_messages(THREAD, more)  # the split that takes them again
        report = memory.check(THREAD)
        assert report.ok, report.findings
        now_split = memory.services.stores(THREAD).topic_store.message_ids()
        assert {m["id"] for m in unsplit} <= set(now_split)
        trace = memory.trace(THREAD, "Postgres")
    ids = [
        i
        for line in _refined(root).read_text("utf-8").splitlines()
        for i in json.loads(line)["ids"]
    ]
    assert len(ids) == len(set(ids))
    assert {m["id"] for m in unsplit} <= set(ids)
    assert trace is not None and [s["object"] for s in trace["states"]] == [
        "Postgres",
        "SQLite",
        "Postgres",
    ]


@pytest.mark.parametrize(
    ("word", "names"),
    [
        ("Postgres", True),
        ("LGBTQ", True),
        ("pottery", True),
        ("camping", True),
        ("健身", True),
        ("beautiful", False),
        ("artistic", False),
        ("learned", False),
        ("recommendations", False),
        ("shares", False),
        ("启发", False),
    ],
)
def test_a_theme_is_named_by_a_noun_or_a_name(word: str, names: bool) -> None:
    assert names_a_thing(word) is names


def test_casual_chat_themes_are_named_by_what_it_is_about(tmp_path: Path) -> None:
    """LoCoMo's first sessions: no adjective, photo marker or speaker's nickname names a theme."""
    sample = json.loads((LOCOMO / "conv-26.json").read_text("utf-8"))
    messages, speaker_a, speaker_b = conversation_messages(
        sample[0] if isinstance(sample, list) else sample
    )
    with TopicMemory(settings=Settings(data_dir=tmp_path / "data", budget_tokens=2000)) as memory:
        memory.import_messages("locomo", messages[:200])
        names = [t["theme"] for t in memory.themes("locomo")]
    assert names and all(names_a_thing(name) for name in names), names
    speakers = {speaker_a.lower(), speaker_b.lower()}
    assert not [n for n in names if any(s.startswith(n.lower()) for s in speakers)], names
    assert "shares" not in names


def test_a_speakers_nickname_is_no_keyword_where_only_the_other_speaks() -> None:
    said: list[StoredMessage] = [
        {
            "id": "c1",
            "role": "user",
            "content": "Hey Mel! I went to the adoption agency.",
            "name": "Caroline",
        },
        {
            "id": "c2",
            "role": "assistant",
            "content": "Wow, Caroline, tell me more!",
            "name": "Melanie",
        },
        {
            "id": "c3",
            "role": "user",
            "content": "Mel, the adoption agency called back today.",
            "name": "Caroline",
        },
    ]
    log = RefinedTurnLog(None)
    assert log.add(said, ["t1"] * len(said)) == 2
    keywords = {w.lower() for record in log.records() for w in record["keywords"]}
    assert "adoption" in keywords and "mel" not in keywords and "caroline" not in keywords
