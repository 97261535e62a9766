"""The ``postgres`` store profile: workers sharing one database, advisory locks, settings."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest
from conversations import SUBJECTS

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.checks import CheckReport, check_topic_files
from langgraph_topics.cli.main import main
from langgraph_topics.errors import InputError, ThreadBusyError
from langgraph_topics.settings import POSTGRES_URI_ENV, STORE_ENV
from langgraph_topics.stores.base_store_topics import StoredRecord
from langgraph_topics.stores.pending_writes import has_pending_writes
from langgraph_topics.stores.store_audit import audit_store_records

SECRET = "s3cr3t-pw"

_WORKER_SCRIPT = """
import faulthandler, json, pathlib, sys, time
from langgraph_topics import Settings, TopicMemory

faulthandler.dump_traceback_later(240, exit=True)  # a hung worker shows where it hangs

uri, data_dir, thread, texts_file, barrier_dir, name, hold = sys.argv[1:8]
texts = json.loads(pathlib.Path(texts_file).read_text(encoding="utf-8"))
settings = Settings(
    data_dir=data_dir, budget_tokens=600, keep_recent=6, store="postgres", postgres_uri=uri,
    lock_timeout_seconds=180,
)
with TopicMemory(settings=settings) as memory:
    barrier = pathlib.Path(barrier_dir)
    (barrier / name).touch()
    deadline = time.monotonic() + 120
    while len(list(barrier.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)  # both workers start chatting together
    if hold == "hold":  # the writer lock for the whole run
        with memory.writing(thread):
            start = time.time()
            for text in texts:
                memory.chat(thread, text)
    else:
        start = time.time()
        for text in texts:
            memory.chat(thread, text)
    print(json.dumps({"start": start, "end": time.time()}))
"""

_HOLDER_SCRIPT = """
import sys, time
from langgraph_topics import Settings, TopicMemory

uri, data_dir, thread = sys.argv[1:4]
memory = TopicMemory(settings=Settings(data_dir=data_dir, store="postgres", postgres_uri=uri))
with memory.writing(thread):
    print("held", flush=True)
    time.sleep(600)
"""


def _settings(uri: str, data_dir: Path, **changes: Any) -> Settings:
    values: dict[str, Any] = {"budget_tokens": 600, "keep_recent": 6, **changes}
    return Settings(data_dir=data_dir, store="postgres", postgres_uri=uri, **values)


def _lines(prefix: str, count: int) -> list[str]:
    questions = [q for subject in ("stocks", "kyoto", "sourdough") for q, _ in SUBJECTS[subject]]
    return [f"[{prefix}{n}] {questions[n % len(questions)]}" for n in range(count)]


def _start_workers(
    tmp_path: Path, uri: str, jobs: list[tuple[str, str, list[str]]], hold: bool
) -> list[dict[str, float]]:
    """Run one worker process per ``(name, thread, texts)``, each on its own data directory."""
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    processes = []
    for name, thread, texts in jobs:
        texts_file = tmp_path / f"{name}.json"
        texts_file.write_text(json.dumps(texts), encoding="utf-8")
        command = [
            sys.executable,
            "-c",
            _WORKER_SCRIPT,
            uri,
            str(tmp_path / f"worker-{name}"),
            thread,
            str(texts_file),
            str(barrier),
            name,
            "hold" if hold else "turns",
        ]
        processes.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    runs = []
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err.decode(errors="replace")[-3000:]
        runs.append(json.loads(out.decode().strip().splitlines()[-1]))
    return runs


# ------------------------------------------------------------------ workers on one database


def test_two_workers_chatting_on_one_thread_keep_every_message_once(
    postgres_uri: str, tmp_path: Path
) -> None:
    texts = {"a": _lines("a", 10), "b": _lines("b", 10)}
    _start_workers(
        tmp_path, postgres_uri, [(name, "shared", t) for name, t in texts.items()], hold=False
    )
    # A third worker with an empty data directory sees it all (its retrieval cache catches up).
    with TopicMemory(settings=_settings(postgres_uri, tmp_path / "reader")) as memory:
        report = memory.check("shared")
        assert report.ok, report.findings
        transcript = memory.transcript("shared")
        said = Counter(m["content"] for m in transcript if m["role"] == "user")
        assert said == Counter(texts["a"] + texts["b"])
        assert len({m["id"] for m in transcript}) == len(transcript) == 40
        assert memory.state("shared")["total_messages"] == 40
        assert memory.topics("shared"), "the conversation should have split"
        assert memory.context("shared", "what about the sourdough starter?")["context"]


def test_two_workers_on_different_threads_run_side_by_side(
    postgres_uri: str, tmp_path: Path
) -> None:
    # Each worker holds its thread's writer lock for its whole run: had the two locks been
    # one, the second run would only begin once the first had ended.
    jobs = [("a", "one", _lines("a", 6)), ("b", "two", _lines("b", 6))]
    runs = _start_workers(tmp_path, postgres_uri, jobs, hold=True)
    assert max(r["start"] for r in runs) < min(r["end"] for r in runs), runs
    with TopicMemory(settings=_settings(postgres_uri, tmp_path / "reader")) as memory:
        for _, thread, texts in jobs:
            assert memory.check(thread).ok
            assert [m["content"] for m in memory.transcript(thread) if m["role"] == "user"] == texts


# ------------------------------------------------------------------------ advisory locks


def test_a_second_writer_is_busy_and_a_killed_holder_frees_the_thread(
    postgres_uri: str, tmp_path: Path
) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER_SCRIPT, postgres_uri, str(tmp_path / "holder"), "t"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held", holder.stderr
        settings = _settings(postgres_uri, tmp_path / "waiter", lock_timeout_seconds=0.3)
        with TopicMemory(settings=settings) as waiter:
            started = time.monotonic()
            with pytest.raises(ThreadBusyError, match="thread 't' is busy"):
                waiter.chat("t", "hello?")
            assert time.monotonic() - started < 10
            assert waiter.chat("other", "hello")  # other threads do not wait
            os.kill(holder.pid, signal.SIGKILL)
            holder.wait(timeout=30)
            deadline = time.monotonic() + 30  # the server ends the dead session's locks
            while True:
                try:
                    waiter.chat("t", "is anyone there?")
                    break
                except ThreadBusyError:
                    assert time.monotonic() < deadline, "the killed holder's lock stayed held"
                    time.sleep(0.1)
            assert waiter.check("t").ok and len(waiter.transcript("t")) == 2
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_the_writer_lock_is_reentrant_in_its_thread_and_excludes_others(
    postgres_uri: str, tmp_path: Path
) -> None:
    settings = _settings(postgres_uri, tmp_path / "m", lock_timeout_seconds=0.2)
    with TopicMemory(settings=settings) as memory, TopicMemory(settings=settings) as other:
        errors: list[BaseException] = []

        def write_meanwhile() -> None:
            try:
                memory.chat("t", "from another thread")
            except BaseException as error:  # noqa: BLE001 - checked below
                errors.append(error)

        with memory.writing("t"), memory.writing("t"):
            assert memory.chat("t", "hello")  # re-entrant: chat takes the lock again
            worker = threading.Thread(target=write_meanwhile)
            worker.start()
            worker.join()
            with pytest.raises(ThreadBusyError):
                other.chat("t", "from another worker")
        assert len(errors) == 1 and isinstance(errors[0], ThreadBusyError)
        assert other.chat("t", "now it is free")
        assert memory.check("t").ok and len(memory.transcript("t")) == 4


# --------------------------------------------------------------- checkpoints on Postgres


def test_retention_and_pending_writes_work_on_the_postgres_tables(
    postgres_uri: str, tmp_path: Path
) -> None:
    with TopicMemory(settings=_settings(postgres_uri, tmp_path / "m"), keep_checkpoints=3) as m:
        for text in _lines("r", 8):
            m.chat("t", text)
        assert not m.interrupted("t")
        with psycopg.connect(postgres_uri) as connection:
            kept = {
                row[0]
                for row in connection.execute(
                    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = 't'"
                )
            }
            written = {
                row[0]
                for row in connection.execute(
                    "SELECT checkpoint_id FROM checkpoint_writes WHERE thread_id = 't'"
                )
            }
            unreferenced = connection.execute(
                "SELECT count(*) FROM checkpoint_blobs b WHERE b.thread_id = 't' AND NOT EXISTS ("
                " SELECT 1 FROM checkpoints c WHERE c.thread_id = b.thread_id"
                " AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version)"
            ).fetchone()
        assert len(kept) == 3 and written <= kept
        assert unreferenced == (0,)
        assert m.check("t").ok and len(m.transcript("t")) == 16
        newest = m.checkpointer.get_tuple({"configurable": {"thread_id": "t"}})
        assert newest is not None
        m.checkpointer.put_writes(newest.config, [("probe", "x")], task_id="probe-task")
        assert has_pending_writes(m.checkpointer, "t")
        assert m.checkpointer.get_tuple(newest.config).pending_writes  # type: ignore[union-attr]


# ------------------------------------------------------------------------------- settings


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_postgres_without_a_uri_is_one_line_naming_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(POSTGRES_URI_ENV, raising=False)
    with pytest.raises(InputError, match=f"postgres_uri \\({POSTGRES_URI_ENV}\\)") as caught:
        Settings(data_dir=tmp_path, store="postgres")
    assert "\n" not in str(caught.value)


def test_a_uri_that_is_not_postgres_is_refused_without_showing_it(tmp_path: Path) -> None:
    for uri in (f"mysql://u:{SECRET}@host/db", "host=localhost dbname=x", "postgresql:/x"):
        with pytest.raises(InputError, match="postgres_uri") as caught:
            Settings(data_dir=tmp_path, store="postgres", postgres_uri=uri)
        assert SECRET not in str(caught.value) and "\n" not in str(caught.value)
    for uri in ("postgres://u@h/db", "postgresql://u@h:5432/db"):
        assert Settings(data_dir=tmp_path, store="postgres", postgres_uri=uri).postgres_uri == uri


def test_the_environment_chooses_the_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STORE_ENV, "postgres")
    monkeypatch.setenv(POSTGRES_URI_ENV, f"postgresql://u:{SECRET}@db.example/topics")
    settings = Settings(data_dir=tmp_path)
    assert settings.store == "postgres" and settings.postgres_uri
    assert SECRET not in repr(settings)  # a password never reaches a log
    monkeypatch.setenv(STORE_ENV, "platform")  # the LangGraph platform store's choice
    assert Settings(data_dir=tmp_path).store == "embedded"
    monkeypatch.setenv(STORE_ENV, "sqlite")
    with pytest.raises(InputError, match=STORE_ENV):
        Settings(data_dir=tmp_path)


def test_the_cli_reports_profile_problems_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(STORE_ENV, "postgres")
    monkeypatch.delenv(POSTGRES_URI_ENV, raising=False)
    assert main(["transcript", "--data-dir", str(tmp_path / "d")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and POSTGRES_URI_ENV in lines[0], lines
    unreachable = f"postgresql://u:{SECRET}@127.0.0.1:{_free_port()}/topics"
    monkeypatch.setenv(POSTGRES_URI_ENV, unreachable)
    assert main(["transcript", "--data-dir", str(tmp_path / "d")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert "cannot reach PostgreSQL at postgresql://u:***@127.0.0.1:" in lines[0]
    assert SECRET not in lines[0]


def test_an_unreachable_server_is_one_line_without_the_password(tmp_path: Path) -> None:
    uri = f"postgresql://u:{SECRET}@127.0.0.1:{_free_port()}/topics"
    with pytest.raises(InputError, match="cannot reach PostgreSQL") as caught:
        TopicMemory(settings=_settings(uri, tmp_path / "m"))
    assert SECRET not in str(caught.value) and "\n" not in str(caught.value)


def test_check_audits_the_shared_records_for_ids_stored_twice() -> None:
    def message(seq: int, topic: str, message_id: str) -> StoredRecord:
        record = {"type": "message", "id": message_id, "seq": seq}
        return StoredRecord(seq, f"{seq:012d}-w", topic, record)

    def header(seq: int, topic: str) -> StoredRecord:
        return StoredRecord(seq, f"{seq:012d}-w", topic, {"type": "topic", "seq": seq})

    records = [header(0, "t1"), message(1, "t1", "m1"), header(2, "t2"), message(3, "t2", "m1")]
    records += [header(4, "t3"), message(5, "t3", "m2")]
    audit = audit_store_records(records, [(0, 4)])
    assert {i: [str(p) for p in places] for i, places in audit.duplicates().items()} == {
        "m1": ["store t1 seq:1", "store t2 seq:3"]
    }
    assert list(audit.elsewhere) == ["m2"]  # a record no checkpoint of the branch recorded
    report = CheckReport()
    check_topic_files(report, audit, working_ids=[])
    assert not report.ok and "'m1' is stored 2 times" in report.findings[0]


def test_the_cli_works_on_the_database_from_any_data_directory(
    postgres_uri: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with TopicMemory(settings=_settings(postgres_uri, tmp_path / "first")) as memory:
        memory.chat("t", "Which ryokan near Gion did we pick?")
    monkeypatch.setenv(STORE_ENV, "postgres")
    monkeypatch.setenv(POSTGRES_URI_ENV, postgres_uri)
    elsewhere = ["--thread", "t", "--data-dir", str(tmp_path / "another-worker")]
    assert main(["check", *elsewhere]) == 0
    assert "all invariants hold" in capsys.readouterr().out
    assert main(["transcript", "--json", *elsewhere]) == 0
    said = [json.loads(line)["content"] for line in capsys.readouterr().out.splitlines()]
    assert said[0] == "Which ryokan near Gion did we pick?" and len(said) == 2


def test_a_worker_goes_on_after_the_server_dropped_its_connections(
    postgres_uri: str, tmp_path: Path
) -> None:
    with TopicMemory(settings=_settings(postgres_uri, tmp_path / "m")) as memory:
        memory.chat("t", "first")
        with psycopg.connect(postgres_uri, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        assert memory.chat("t", "second")  # idle pool and lock connections are replaced
        assert memory.check("t").ok and len(memory.transcript("t")) == 4


def test_a_second_worker_finds_the_topics_and_tool_results_the_first_one_wrote(
    postgres_uri: str, tmp_path: Path
) -> None:
    with TopicMemory(settings=_settings(postgres_uri, tmp_path / "first")) as first:
        for line in _lines("a", 24):
            first.chat("t", line)
        stores = first.services.stores("t")
        topic_ids = stores.topic_store.topic_ids()
        reference = stores.namespace_store.put("line\n" * 2000, tool="grep")
    assert topic_ids, "the chat should have split into topics"
    # Another worker: its own (empty) data directory, so its local topic index starts empty.
    with TopicMemory(settings=_settings(postgres_uri, tmp_path / "second")) as second:
        stores = second.services.stores("t")
        index = stores.topic_index
        assert set(stores.topic_store.topic_ids()) == set(topic_ids)
        assert set(index.entries()) == set(topic_ids)  # type: ignore[attr-defined]
        found = [topic for topic, _ in index.search("sourdough starter", k=len(topic_ids))]
        assert set(found) == set(topic_ids)
        assert stores.namespace_store.read(reference) == "line\n" * 2000
