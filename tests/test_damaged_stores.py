"""Damaged, read-only and full stores: one line naming the file, status 2, nothing lost (issue 41).

A small data directory is built once per module (an import that splits into topics) and each
test damages a copy of it: the checkpoint database garbled or cut, the Chroma topic index
garbled (derived data: rebuilt with one warning), the data directory read-only, the disk full.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from cli_runner import run_cli as cli
from conversations import subject_records
from damaged_data import (
    BUDGET,
    THREAD,
    command_args,
    cut_in_half,
    garble,
)
from small_disks import fill, unmount

from langgraph_topics import TopicMemory
from langgraph_topics.cli.store_errors import store_fault_of
from langgraph_topics.errors import DamagedStoreError, StoreError
from langgraph_topics.stores.topic_index import DAMAGED_INDEX_PREFIX

pytest_plugins = ["damaged_data", "small_disks"]  # the built data directory; a small tmpfs


COMMANDS = ["check", "transcript", "context", "topics", "chat", "import", "expand"]


@pytest.mark.parametrize("damage", [garble, cut_in_half], ids=["garbled", "cut"])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_damaged_checkpoint_database_is_one_line_naming_it_and_repair(
    data_dir: Path, capsys: pytest.CaptureFixture[str], command: str, damage: object
) -> None:
    database = data_dir / "checkpoints.sqlite"
    damage(database)  # type: ignore[operator]
    before = database.read_bytes()
    args = command_args(command, data_dir)
    if command == "expand":
        args.insert(1, "m000")
    status, _, lines = cli(capsys, *args, stdin="hello\n")
    assert status == 2, lines
    assert len(lines) == 1, lines
    assert lines[0].startswith("langgraph-topics: error: ") and "Traceback" not in lines[0]
    assert str(database) in lines[0] and "damaged" in lines[0]
    assert "langgraph-topics repair" in lines[0]
    assert database.read_bytes() == before  # nothing written into it


def test_verbose_shows_the_traceback_of_a_store_fault(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    garble(data_dir / "checkpoints.sqlite")
    status, _, lines = cli(capsys, *command_args("check", data_dir), "--verbose")
    assert status == 2
    assert any("Traceback" in line for line in lines)


def test_the_api_raises_a_typed_error_for_a_damaged_database(data_dir: Path) -> None:
    garble(data_dir / "checkpoints.sqlite")
    with pytest.raises(DamagedStoreError) as raised:
        TopicMemory(data_dir=data_dir, budget_tokens=int(BUDGET))
    assert isinstance(raised.value, StoreError)
    assert raised.value.path == str(data_dir / "checkpoints.sqlite")
    assert "\n" not in str(raised.value)


def test_a_damaged_topic_index_is_rebuilt_from_the_topic_files_with_one_warning(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = data_dir / "index" / "chroma.sqlite3"
    size = index.stat().st_size
    with index.open("r+b") as handle:  # pages past the header: "malformed" when opened
        handle.seek(size // 3)
        handle.write(os.urandom(min(200_000, size - size // 3)))
    status, out, lines = cli(capsys, *command_args("check", data_dir))
    assert status == 0, (out, lines)
    assert len(lines) == 1, lines
    assert "topic index was damaged" in lines[0] and "rebuilt" in lines[0]
    assert list(data_dir.glob(f"{DAMAGED_INDEX_PREFIX}*"))  # the damaged copy is kept
    with TopicMemory(data_dir=data_dir, budget_tokens=int(BUDGET)) as memory:
        topics = memory.topics(THREAD)
        index_now = memory.services.stores(THREAD).topic_index
        assert index_now.count() == len(topics) > 0
    status, out, lines = cli(capsys, *command_args("chat", data_dir), stdin="how about ROE?\n")
    assert status == 0 and out.strip() and not lines, lines


def test_garbled_retrieval_vectors_are_rebuilt_with_one_warning(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (vectors,) = data_dir.glob("threads/*/retrieval/vectors.f16")
    vectors.write_bytes(os.urandom(vectors.stat().st_size))
    status, out, lines = cli(capsys, *command_args("check", data_dir))
    assert status == 0, (out, lines)
    assert len(lines) == 1 and "damaged vectors" in lines[0], lines
    with TopicMemory(data_dir=data_dir, budget_tokens=int(BUDGET)) as memory:
        stores = memory.services.stores(THREAD)
        matrix = stores.message_index.vectors()
        assert len(matrix) == len(stores.topic_store.message_ids()) > 0
        assert np.isfinite(matrix).all()


def test_a_chroma_panic_or_error_reaching_the_command_line_is_one_line(tmp_path: Path) -> None:
    class PanicException(BaseException):  # how PyO3 surfaces a Rust panic
        pass

    fault = store_fault_of(PanicException("called `Option::unwrap()` on a `None` value"), tmp_path)
    assert fault is not None and str(tmp_path / "index") in str(fault)
    assert store_fault_of(KeyboardInterrupt(), tmp_path) is None
    assert store_fault_of(ValueError("x"), tmp_path) is None


@pytest.fixture
def read_only(data_dir: Path, tmp_path: Path) -> Iterator[Path]:
    """``data_dir`` seen through a read-only bind mount (root), or made read-only (others)."""
    if os.geteuid() != 0:
        for path in [data_dir, *data_dir.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        yield data_dir
        for path in [data_dir, *data_dir.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)
        return
    view = tmp_path / "read-only"
    view.mkdir()
    bound = subprocess.run(["mount", "--bind", str(data_dir), str(view)], capture_output=True)
    if bound.returncode != 0:
        pytest.skip(f"cannot bind-mount as root: {bound.stderr.decode().strip()}")
    try:
        remount = ["mount", "-o", "remount,bind,ro", str(view)]
        if subprocess.run(remount, capture_output=True).returncode != 0:
            pytest.skip("cannot remount read-only")
        yield view
    finally:
        unmount(view)


@pytest.mark.parametrize("command", ["check", "transcript", "topics", "chat", "context"])
def test_a_read_only_data_directory_is_one_line_naming_the_file(
    read_only: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    status, _, lines = cli(capsys, *command_args(command, read_only), stdin="hello\n")
    assert status == 2, lines
    assert len(lines) == 1, lines
    assert str(read_only) in lines[0] and "Traceback" not in lines[0]


def test_a_full_disk_during_chat_is_one_line_and_the_line_is_answered_later(
    built: Path, small_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = small_disk / "data"
    shutil.copytree(built, data_dir)
    filler = fill(small_disk, 100_000)
    lines_in = "".join(f"line {n} about stocks, Kyoto and bread\n" for n in range(40))
    status, out, lines = cli(capsys, *command_args("chat", data_dir), stdin=lines_in)
    assert status == 2, lines
    errors = [line for line in lines if ": error: " in line]
    assert len(errors) == 1 and "disk full" in errors[0] and str(data_dir) in errors[0], lines
    assert not any("Traceback" in line for line in lines)
    answered = len(out.strip().splitlines())
    assert answered < 40
    filler.unlink()
    status, out, lines = cli(capsys, *command_args("chat", data_dir), stdin="")
    assert status == 0, lines
    assert any("interrupted" in line or "recovered" in line for line in lines), lines
    status, report, lines = cli(capsys, *command_args("check", data_dir))
    assert status == 0, (report, lines)
    with TopicMemory(data_dir=data_dir, budget_tokens=int(BUDGET)) as memory:
        texts = [m["content"] for m in memory.transcript(THREAD)]
    assert f"line {answered} about stocks, Kyoto and bread" in texts  # the line in flight


def test_a_full_disk_during_import_is_one_line_and_importing_again_finishes_it(
    built: Path, small_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = small_disk / "data"
    shutil.copytree(built, data_dir)
    records = subject_records(["kyoto", "sourdough", "fitness", "stocks"] * 3, prefix="n")
    conversation = small_disk.parent / "more.jsonl"  # off the small disk
    conversation.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    args = ["import", str(conversation), "--data-dir", str(data_dir), "--thread", THREAD]
    filler = fill(small_disk, 60_000)
    status, _, lines = cli(capsys, *args, "--budget", BUDGET)
    assert status == 2, lines
    errors = [line for line in lines if ": error: " in line]
    assert len(errors) == 1 and "disk full" in errors[0], lines
    assert not any("Traceback" in line for line in lines)
    filler.unlink()
    status, out, lines = cli(capsys, *args, "--budget", BUDGET)
    assert status == 0, (out, lines)
    status, report, lines = cli(capsys, *command_args("check", data_dir))
    assert status == 0, (report, lines)
    with TopicMemory(data_dir=data_dir, budget_tokens=int(BUDGET)) as memory:
        held = {m["id"] for m in memory.transcript(THREAD)}
    assert {r["id"] for r in records} <= held


def test_a_damaged_page_met_mid_operation_is_a_typed_error_in_the_api(data_dir: Path) -> None:
    database = data_dir / "checkpoints.sqlite"
    with closing(sqlite3.connect(database)) as connection:  # every row into the main file
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = database.stat().st_size
    with database.open("r+b") as handle:  # the data pages, not the header SQLite opens with
        handle.seek(4096)
        handle.write(b"\xab" * (size - 4096))
    with pytest.raises(DamagedStoreError) as raised:
        with TopicMemory(data_dir=data_dir, budget_tokens=int(BUDGET)) as memory:
            memory.state(THREAD)
    assert "langgraph-topics repair" in str(raised.value)
