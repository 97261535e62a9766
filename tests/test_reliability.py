"""Reliability: a bad input is one clear line and writes nothing; imports are idempotent.

Also: thread ids are checked, budgets are checked before they are stored, and writers of one
thread take turns across processes while readers keep working.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from conversations import subject_records
from hypothesis import given, settings
from hypothesis import strategies as st

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.cli.main import main
from langgraph_topics.errors import InputError, ThreadBusyError
from langgraph_topics.importing import check_records, normalize_timestamp, read_jsonl
from langgraph_topics.services import thread_directory_name
from langgraph_topics.settings import LOCK_TIMEOUT_ENV, MIN_BUDGET_TOKENS

CLI = [sys.executable, "-m", "langgraph_topics.cli.main"]
BUDGET = "600"


# ------------------------------------------------------------------------------------ helpers


def _write_jsonl(path: Path, records: Sequence[Any]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    return path


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, list[str]]:
    """Run the CLI in this process; returns the status, stdout and the non-empty stderr lines."""
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, [line for line in err.splitlines() if line.strip()]


def _cli_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """Run the CLI expecting a usage/input error: exit 2 and exactly one line on stderr."""
    try:
        status, _, lines = _cli(capsys, *args)
    except SystemExit as exit_:  # argparse reports its errors by exiting
        status = int(exit_.code or 0)
        lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert status == 2, lines
    assert len(lines) == 1, lines
    assert "Traceback" not in lines[0]
    return lines[0]


def _counts(data_dir: Path, thread: str = "default") -> tuple[int, int]:
    """The thread's message counter and transcript length; asserts its invariants hold."""
    with TopicMemory(data_dir=data_dir, budget_tokens=int(BUDGET)) as memory:
        report = memory.check(thread)
        assert report.ok, report.findings
        return memory.state(thread).get("total_messages", 0), len(memory.transcript(thread))


@pytest.fixture
def imported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[tuple[Path, Path]]:
    """A data directory whose ``default`` thread holds one imported conversation (24 messages)."""
    data_dir = tmp_path / "d"
    path = _write_jsonl(tmp_path / "first.jsonl", subject_records(["stocks", "kyoto", "sourdough"]))
    status, out, _ = _cli(
        capsys, "import", str(path), "--data-dir", str(data_dir), "--budget", BUDGET
    )
    assert status == 0 and "imported 24 messages" in out
    yield data_dir, path


# ------------------------------------------------------------------------ 1. duplicate ids


def test_an_id_reused_for_another_message_names_both_lines(
    imported: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir, _ = imported
    records = [
        {"id": "x1", "role": "user", "content": "first"},
        {"id": "x2", "role": "assistant", "content": "reply"},
        {"id": "x1", "role": "user", "content": "second"},
    ]
    path = _write_jsonl(tmp_path / "dup.jsonl", records)
    line = _cli_error(capsys, "import", str(path), "--data-dir", str(data_dir))
    assert f"{path}:3:" in line and "line 1" in line and "'x1'" in line
    assert _counts(data_dir) == (24, 24)


def test_an_identical_repeat_is_refused_too_naming_both_lines(
    imported: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir, _ = imported
    record = {"id": "x1", "role": "user", "content": "same", "timestamp": "2024-06-01T10:00:00"}
    path = _write_jsonl(
        tmp_path / "twice.jsonl",
        [record, {"id": "x2", "role": "assistant", "content": "ok"}, record],
    )
    line = _cli_error(capsys, "import", str(path), "--data-dir", str(data_dir))
    assert f"{path}:3:" in line and "line 1" in line and "listed twice" in line
    assert _counts(data_dir) == (24, 24)


def test_the_api_refuses_duplicate_ids_naming_both_records(tmp_path: Path) -> None:
    with TopicMemory(data_dir=tmp_path / "m", budget_tokens=600) as memory:
        with pytest.raises(ValueError, match=r"messages\[2\].*'m1'.*messages\[0\]"):
            memory.import_messages(
                "t",
                [
                    {"id": "m1", "role": "user", "content": "a"},
                    {"id": "m2", "role": "assistant", "content": "b"},
                    {"id": "m1", "role": "assistant", "content": "c"},
                ],
            )
        assert memory.state("t") == {} and memory.transcript("t") == []


# ------------------------------------------------------------------- 2. idempotent imports


def test_importing_the_same_file_again_adds_nothing(
    imported: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir, path = imported
    status, out, _ = _cli(capsys, "import", str(path), "--data-dir", str(data_dir))
    assert status == 0 and "imported 0 messages" in out and "24 already there" in out
    assert _counts(data_dir) == (24, 24)


def test_importing_the_same_records_again_adds_nothing_even_once_split(tmp_path: Path) -> None:
    records = subject_records(["stocks", "kyoto", "sourdough"])
    settings_ = Settings(data_dir=tmp_path / "m", budget_tokens=500, keep_recent=6)
    with TopicMemory(settings=settings_) as memory:
        assert memory.import_messages("t", records) == 24
        assert memory.services.stores("t").topic_store.message_ids(), "some ids should be split"
        assert memory.import_messages("t", records) == 0
        # A grown input adds only what is new.
        grown = records + subject_records(["fitness"], prefix="n")
        assert memory.import_messages("t", grown) == 8
        assert memory.state("t")["total_messages"] == 32
        transcript = [m["id"] for m in memory.transcript("t")]
        assert sorted(transcript) == sorted(r["id"] for r in grown)
        assert memory.check("t").ok


def test_an_id_the_thread_holds_with_other_content_is_refused_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = subject_records(["stocks", "kyoto", "sourdough"])
    settings_ = Settings(data_dir=tmp_path / "m", budget_tokens=500, keep_recent=6)
    with TopicMemory(settings=settings_) as memory:
        memory.import_messages("t", records)
        split = next(iter(memory.services.stores("t").topic_store.message_ids()))
        unsplit = memory.state("t")["messages"][-1].id
        for taken in (split, unsplit):  # one in a topic, one in the working set
            changed = [dict(r) for r in records] + [
                {"id": "new-1", "role": "user", "content": "a new question"}
            ]
            position = next(i for i, r in enumerate(changed) if r["id"] == taken)
            changed[position]["content"] = "edited after the first import"
            with pytest.raises(InputError) as caught:
                memory.import_messages("t", changed)
            assert f"messages[{position}]" in str(caught.value) and repr(taken) in str(caught.value)
            assert memory.state("t")["total_messages"] == 24 and memory.check("t").ok

    # Through the command line the error names the file line.
    path = _write_jsonl(tmp_path / "edited.jsonl", [dict(records[0], content="edited")])
    line = _cli_error(
        capsys,
        "import",
        str(path),
        "--data-dir",
        str(tmp_path / "m"),
        "--thread",
        "t",
        "--budget",
        "500",
    )
    assert f"{path}:1:" in line and repr(records[0]["id"]) in line


def test_records_without_ids_get_stable_ids_so_a_reimport_adds_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = [
        {k: v for k, v in r.items() if k != "id"} for r in subject_records(["stocks", "kyoto"])
    ]
    records += [
        {"role": "user", "content": "ok"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "ok"},
    ]  # identical twins stay two messages
    path = _write_jsonl(tmp_path / "noids.jsonl", records)
    data = ["--data-dir", str(tmp_path / "d"), "--budget", BUDGET]
    status, out, _ = _cli(capsys, "import", str(path), *data)
    assert status == 0 and "imported 19 messages" in out
    status, out, _ = _cli(capsys, "import", str(path), *data)
    assert status == 0 and "imported 0 messages" in out
    assert _counts(tmp_path / "d") == (19, 19)
    first = [m.id for m in check_records(read_jsonl(path))]
    assert first == [m.id for m in check_records(read_jsonl(path))]
    assert len(set(first)) == len(first) and all(i.startswith("imp-") for i in first)


# ---------------------------------------------------------------------------- 3. thread ids


@pytest.mark.parametrize(
    ("thread", "problem"),
    [
        ("", "empty"),
        ("a\x00b", "NUL"),
        ("a\nb", "control character U+000A"),
        ("x" * 257, "more than 256"),
        ("bad\udcffbytes", "lone surrogate"),
    ],
)
def test_bad_thread_ids_are_refused_before_anything_is_written(
    imported: tuple[Path, Path], capsys: pytest.CaptureFixture[str], thread: str, problem: str
) -> None:
    data_dir, path = imported
    line = _cli_error(capsys, "import", str(path), "--data-dir", str(data_dir), "--thread", thread)
    assert problem in line and "--thread" in line
    with TopicMemory(data_dir=data_dir, budget_tokens=600) as memory:
        for call in (
            lambda: memory.chat(thread, "hello"),
            lambda: memory.import_messages(thread, [{"role": "user", "content": "x"}]),
            lambda: memory.context(thread, "hello"),
            lambda: memory.topics(thread),
        ):
            with pytest.raises(ValueError, match=re.escape(problem)) as caught:
                call()
            assert repr(thread)[:40] in str(caught.value)
    threads = sorted(p.name for p in (data_dir / "threads").iterdir())
    assert threads == [thread_directory_name("default")]
    assert _counts(data_dir) == (24, 24)


def test_a_thread_named_with_dots_and_slashes_stays_inside_the_data_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "box" / "d"
    path = _write_jsonl(tmp_path / "c.jsonl", subject_records(["stocks"]))
    for thread in ("../x", "..", "a/../../b"):
        status, out, _ = _cli(
            capsys,
            "import",
            str(path),
            "--data-dir",
            str(data_dir),
            "--thread",
            thread,
            "--budget",
            BUDGET,
        )
        assert status == 0 and "imported 8 messages" in out
        with TopicMemory(data_dir=data_dir, budget_tokens=600) as memory:
            assert memory.chat(thread, "what should I read first?")
            assert memory.check(thread).ok and len(memory.transcript(thread)) == 10
    # Nothing escaped: the data dir holds what it always holds, one directory per thread.
    assert sorted(os.listdir(tmp_path / "box")) == ["d"]
    names = {name for name in os.listdir(data_dir) if not name.startswith("checkpoints.sqlite")}
    assert names == {"cli.json", "index", "threads"}
    assert len(list((data_dir / "threads").iterdir())) == 3


# ------------------------------------------------------------------- 4. whole-input checks


BAD_LINES = [
    ({"role": "user", "content": "hi", "timestamp": "next tuesday"}, "timestamp"),
    ({"role": "user", "content": "hi", "timestamp": 1714550400}, "timestamp must be a string"),
    ({"role": "user"}, "content is missing"),
    ({"role": "user", "content": None}, "content is null"),
    ({"role": "user", "content": ["a", "b"]}, "content must be a string"),
    ({"role": "system", "content": "be nice"}, "role must be 'user' or 'assistant'"),
    ({"content": "hi"}, "role must be"),
    ({"role": "user", "content": "\ud800"}, "lone surrogate U+D800"),
    ({"role": "user", "content": "hi", "name": 7}, "name must be a string"),
]


@pytest.mark.parametrize(("bad", "problem"), BAD_LINES)
def test_a_bad_record_after_good_ones_writes_nothing(
    imported: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    bad: dict[str, Any],
    problem: str,
) -> None:
    data_dir, _ = imported
    good = subject_records(["fitness"], prefix="f")
    path = tmp_path / "bad.jsonl"
    # ensure_ascii keeps a lone surrogate as its \ud800 escape, as an exporter would write it
    lines = [json.dumps(r, ensure_ascii=False) for r in good] + [json.dumps(bad)]
    path.write_text("\n".join(lines) + "\n", "utf-8")
    line = _cli_error(capsys, "import", str(path), "--data-dir", str(data_dir))
    assert line.startswith(f"langgraph-topics: error: {path}:{len(good) + 1}: ")
    assert problem in line
    assert _counts(data_dir) == (24, 24)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b'{"role": "user", "content": "caf\xe9"}\n', "not UTF-8 (byte 0xe9"),
        (b'{"role": "user", "content": "hi"\n', "not JSON"),
        (b'["user", "hi"]\n', "expected a JSON object, got an array"),
        (b'"just text"\n', "expected a JSON object, got a string"),
        (b"null\n", "expected a JSON object, got null"),
    ],
)
def test_a_line_that_is_not_a_utf8_json_object_writes_nothing(
    imported: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    raw: bytes,
    problem: str,
) -> None:
    data_dir, _ = imported
    good = "".join(json.dumps(r) + "\n" for r in subject_records(["fitness"], prefix="f"))
    path = tmp_path / "bad.jsonl"
    path.write_bytes(good.encode("utf-8") + b"\n" + raw)  # the blank line still counts
    line = _cli_error(capsys, "import", str(path), "--data-dir", str(data_dir))
    assert f"{path}:10: {problem}" in line
    assert _counts(data_dir) == (24, 24)


def test_a_missing_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = _cli_error(
        capsys, "import", str(tmp_path / "nope.jsonl"), "--data-dir", str(tmp_path / "d")
    )
    assert "nope.jsonl: cannot read the file" in line
    assert not (tmp_path / "d").exists()


def test_common_timestamps_are_normalised_and_u2028_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stamps = {
        "a": ("2024-05-01T09:00:00", "2024-05-01T09:00:00"),
        "b": ("2024-05-01T09:01:00Z", "2024-05-01T09:01:00+00:00"),
        "c": ("2024-05-01 09:02", "2024-05-01T09:02:00"),
        "d": ("2024-05-01 09:03:30", "2024-05-01T09:03:30"),
        "e": ("1:56 pm on 8 May, 2023", "2023-05-08T13:56:00"),
        "f": ("2024-05-01T11:04:00+02:00", "2024-05-01T11:04:00+02:00"),
    }
    records = [
        {
            "id": key,
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"line\u2028separator {key}",
            "timestamp": given_,
        }
        for i, (key, (given_, _)) in enumerate(stamps.items())
    ]
    path = _write_jsonl(tmp_path / "times.jsonl", records)
    status, out, _ = _cli(
        capsys, "import", str(path), "--data-dir", str(tmp_path / "d"), "--budget", BUDGET
    )
    assert status == 0 and "imported 6 messages" in out
    with TopicMemory(data_dir=tmp_path / "d", budget_tokens=600) as memory:
        stored = {m["id"]: m for m in memory.transcript("default")}
    assert {key: stored[key]["timestamp"] for key in stamps} == {
        key: iso for key, (_, iso) in stamps.items()
    }
    assert stored["a"]["content"] == "line\u2028separator a"


# ---------------------------------------------------------------------------- 5. budgets


@pytest.mark.parametrize("budget", ["0", "-5", str(MIN_BUDGET_TOKENS - 1), "many"])
def test_a_bad_budget_is_refused_before_it_is_stored(
    imported: tuple[Path, Path], capsys: pytest.CaptureFixture[str], budget: str
) -> None:
    data_dir, path = imported
    remembered = (data_dir / "cli.json").read_text("utf-8")
    line = _cli_error(capsys, "check", "--data-dir", str(data_dir), "--budget", budget)
    assert "--budget" in line
    assert (data_dir / "cli.json").read_text("utf-8") == remembered
    status, _, _ = _cli(capsys, "check", "--data-dir", str(data_dir))
    assert status == 0  # later commands still work


@pytest.mark.parametrize("content", ["{not json", '{"budget": 0}', '["budget"]', '{"budget": "9"}'])
def test_a_corrupt_cli_json_is_one_line_naming_the_file(
    imported: tuple[Path, Path], capsys: pytest.CaptureFixture[str], content: str
) -> None:
    data_dir, _ = imported
    (data_dir / "cli.json").write_text(content, "utf-8")
    line = _cli_error(capsys, "topics", "--data-dir", str(data_dir))
    assert str(data_dir / "cli.json") in line
    status, _, _ = _cli(capsys, "topics", "--data-dir", str(data_dir), "--budget", BUDGET)
    assert status == 0  # a good --budget replaces it


def test_settings_refuse_a_budget_under_the_floor(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="budget_tokens"):
        Settings(data_dir=tmp_path, budget_tokens=MIN_BUDGET_TOKENS - 1)
    assert Settings(data_dir=tmp_path, budget_tokens=MIN_BUDGET_TOKENS).budget_tokens == 250


# -------------------------------------------------------------------------- 6. thread locks


def _spawn(*args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
    )


def _finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=300)
    return process.returncode, out, err


def test_two_processes_importing_one_thread_lose_nothing(tmp_path: Path) -> None:
    records = subject_records(["stocks", "kyoto", "sourdough", "fitness"])
    halves = [records[:16], records[16:]]
    paths = [_write_jsonl(tmp_path / f"half{n}.jsonl", half) for n, half in enumerate(halves)]
    data = ["--data-dir", str(tmp_path / "d"), "--thread", "shared", "--budget", BUDGET]
    processes = [_spawn("import", str(path), *data) for path in paths]
    results = [_finish(p) for p in processes]
    expected: list[str] = []
    for half, (status, _, err) in zip(halves, results, strict=True):
        if status == 0:
            expected += [r["id"] for r in half]
        else:  # refused as a whole, with the one-line busy message
            assert status == 3, err
            assert err.strip().splitlines()[-1] == (
                "langgraph-topics: error: thread 'shared' is busy: another process is writing it"
            )
    assert expected, results
    with TopicMemory(data_dir=tmp_path / "d", budget_tokens=600) as memory:
        ids = [m["id"] for m in memory.transcript("shared")]
        assert memory.check("shared").ok
        assert memory.state("shared")["total_messages"] == len(expected)
    assert sorted(ids) == sorted(expected) and len(ids) == len(set(ids))


def test_two_processes_on_different_threads_both_succeed(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "c.jsonl", subject_records(["stocks", "kyoto"]))
    data = ["--data-dir", str(tmp_path / "d"), "--budget", BUDGET]
    processes = [_spawn("import", str(path), *data, "--thread", t) for t in ("one", "two")]
    results = [_finish(p) for p in processes]
    assert [r[0] for r in results] == [0, 0], results
    with TopicMemory(data_dir=tmp_path / "d", budget_tokens=600) as memory:
        for thread in ("one", "two"):
            assert len(memory.transcript(thread)) == 16 and memory.check(thread).ok


def test_a_second_writer_gives_up_with_a_busy_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write_jsonl(tmp_path / "c.jsonl", subject_records(["stocks"]))
    holder = TopicMemory(data_dir=tmp_path / "d", budget_tokens=600)
    monkeypatch.setenv(LOCK_TIMEOUT_ENV, "0")
    waiter = TopicMemory(data_dir=tmp_path / "d", budget_tokens=600)
    try:
        with holder.writing("t"):
            with pytest.raises(ThreadBusyError, match="thread 't' is busy: another process"):
                waiter.chat("t", "hello")
            status, _, lines = _cli(
                capsys, "import", str(path), "--data-dir", str(tmp_path / "d"), "--thread", "t"
            )
            assert status == 3 and lines == [
                "langgraph-topics: error: thread 't' is busy: another process is writing it"
            ]
            assert waiter.chat("other", "hello")  # other threads do not wait
            assert holder.chat("t", "hello")  # the holder may write (the lock is re-entrant)
        assert waiter.import_messages("t", subject_records(["stocks"])) == 8
        assert waiter.check("t").ok and len(waiter.transcript("t")) == 10
    finally:
        holder.close()
        waiter.close()


_IMPORT_SCRIPT = """
import json, sys
from langgraph_topics import Settings, TopicMemory
data_dir, thread, path = sys.argv[1:4]
settings = Settings(data_dir=data_dir, budget_tokens=500, keep_recent=6)
with TopicMemory(settings=settings) as memory:
    records = [json.loads(line) for line in open(path, encoding="utf-8")]
    print(memory.import_messages(thread, records))
"""


def _split_on_disk(data_dir: Path, thread: str) -> int:
    """How many messages the thread's topic files hold, read from the files themselves."""
    topics = data_dir / "threads" / thread_directory_name(thread) / "topics"
    lines = (
        line for path in topics.glob("*.jsonl") for line in path.read_text("utf-8").split("\n")
    )
    return sum(1 for line in lines if line and json.loads(line).get("type") == "message")


def test_a_long_lived_memory_sees_what_another_process_wrote(tmp_path: Path) -> None:
    records = subject_records(["stocks", "kyoto", "sourdough", "fitness"])
    settings_ = Settings(data_dir=tmp_path / "d", budget_tokens=500, keep_recent=6)
    with TopicMemory(settings=settings_) as memory:
        memory.import_messages("t", records[:16])
        assert memory.topics("t") and memory.context("t", "ryokan near Gion?")
        split_here = len(memory.services.stores("t").topic_store.message_ids())
        assert memory.services.stores("t").topic_index.search("stocks", k=5)  # loads the index
        middle = _write_jsonl(tmp_path / "middle.jsonl", records[16:24])
        done = subprocess.run(
            [sys.executable, "-c", _IMPORT_SCRIPT, str(tmp_path / "d"), "t", str(middle)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0 and done.stdout.strip() == "8", done.stderr[-2000:]
        assert _split_on_disk(tmp_path / "d", "t") > split_here, "the other process should split"
        # This process's cached stores and topic index are stale now; it must notice.
        topic_ids = {t["id"] for t in memory.topics("t")}
        index = memory.services.stores("t").topic_index
        assert {hit for hit, _ in index.search("sourdough starter", k=50)} == topic_ids
        memory.import_messages("t", records[24:])
        assert memory.context("t", "how much protein a day?")["context"]["tokens"] <= 500
        ids = [m["id"] for m in memory.transcript("t")]
        assert sorted(ids) == sorted(r["id"] for r in records)
        assert memory.state("t")["total_messages"] == 32 and memory.check("t").ok


def test_context_queries_do_not_crash_while_another_process_writes(tmp_path: Path) -> None:
    records = subject_records(["stocks", "kyoto", "sourdough", "fitness"])
    settings_ = Settings(data_dir=tmp_path / "d", budget_tokens=500, keep_recent=6)
    with TopicMemory(settings=settings_) as memory:
        memory.import_messages("t", records[:8])
        rest = _write_jsonl(tmp_path / "rest.jsonl", records[8:])
        writer = _spawn(
            "import",
            str(rest),
            "--data-dir",
            str(tmp_path / "d"),
            "--thread",
            "t",
            "--budget",
            "500",
        )
        queries = 0
        while writer.poll() is None or queries == 0:
            assert memory.context("t", "what about the sourdough starter?")["context"]
            memory.topics("t")
            queries += 1
        status, _, err = _finish(writer)
        assert status == 0, err
        assert len(memory.transcript("t")) == 32 and memory.check("t").ok


def test_threads_of_one_process_take_turns_on_one_thread(tmp_path: Path) -> None:
    settings_ = Settings(data_dir=tmp_path / "d", budget_tokens=600)
    with TopicMemory(settings=settings_) as memory:
        halves = [subject_records(["stocks"], prefix="a"), subject_records(["kyoto"], prefix="b")]
        errors: list[BaseException] = []

        def run(records: list[dict[str, Any]]) -> None:
            try:
                memory.import_messages("t", records)
            except BaseException as error:  # noqa: BLE001 - reported below
                errors.append(error)

        workers = [threading.Thread(target=run, args=(half,)) for half in halves]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert not errors
        assert memory.state("t")["total_messages"] == 16 and memory.check("t").ok


# ------------------------------------------------------------------------ property tests

_instants = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2099, 12, 31))


@given(_instants)
def test_every_accepted_form_of_a_time_normalises_to_the_same_iso_time(when: datetime) -> None:
    when = when.replace(microsecond=0)
    iso = when.isoformat()
    assert normalize_timestamp(iso) == iso
    assert normalize_timestamp(when.strftime("%Y-%m-%d %H:%M:%S")) == iso
    minute = when.replace(second=0)
    assert normalize_timestamp(minute.strftime("%Y-%m-%d %H:%M")) == minute.isoformat()
    locomo = f"{int(minute.strftime('%I'))}:{minute:%M} {minute:%p} on {minute.day} {minute:%B, %Y}"
    assert normalize_timestamp(locomo.lower()) == minute.isoformat()


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
_record = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant"]), "content": _text},
    optional={"timestamp": _instants.map(lambda d: d.isoformat()), "name": _text},
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_record, max_size=12))
def test_id_less_records_get_unique_ids_that_survive_a_round_trip_through_a_file(
    records: list[dict[str, Any]],
) -> None:
    import tempfile

    checked = check_records(records)
    ids = [entry.id for entry in checked]
    assert len(set(ids)) == len(ids)
    assert ids == [entry.id for entry in check_records(records)]
    with tempfile.TemporaryDirectory() as scratch:
        path = _write_jsonl(Path(scratch) / "r.jsonl", records)
        from_file = check_records(read_jsonl(path))
    assert [entry.id for entry in from_file] == ids
    assert [entry.message.content for entry in from_file] == [r["content"] for r in records]


def test_a_run_whose_config_names_an_empty_thread_is_refused_not_answered_from_default(
    tmp_path: Path,
) -> None:
    from langchain_core.messages import HumanMessage

    from langgraph_topics.services import TopicContext

    with TopicMemory(data_dir=tmp_path / "d", budget_tokens=600) as memory:
        memory.chat("default", "My secret is the blue door.")
        for bad in ("", "a\x00b"):
            with pytest.raises(InputError):
                memory.graph.invoke(
                    {"messages": [HumanMessage("what is my secret?")]},
                    {"configurable": {"thread_id": bad}},
                    context=TopicContext(services=memory.services),
                )
        assert memory.state("default")["total_messages"] == 2
