"""A small data directory to damage (issue 41): built once per test module, copied per test."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from conversations import subject_records

from langgraph_topics.cli.main import main
from langgraph_topics.settings import CHEAP_MODEL_ENV, ROLE_NAMES, STRONG_MODEL_ENV

THREAD = "alice"
BUDGET = "600"
MODEL_VARIABLES = (
    STRONG_MODEL_ENV,
    CHEAP_MODEL_ENV,
    *(f"LANGGRAPH_TOPICS_{role.upper()}_MODEL" for role in ROLE_NAMES),
)


def without_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """No model from the developer's environment: every role runs natively."""
    for variable in MODEL_VARIABLES:
        monkeypatch.delenv(variable, raising=False)


def build_data_dir(root: Path) -> Path:
    """A data directory whose thread has topics and unsplit messages, imported by the CLI."""
    records = subject_records(["stocks", "kyoto", "sourdough", "fitness"])
    conversation = root / "conversation.jsonl"
    conversation.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8"
    )
    data_dir = root / "data"
    status = main(
        ["import", str(conversation), "--data-dir", str(data_dir), "--thread", THREAD]
        + ["--budget", BUDGET]
    )
    assert status == 0
    assert any((data_dir / "threads").glob("*/topics/*.jsonl")), "the import split nothing"
    return data_dir


def copy_of(built: Path, tmp_path: Path) -> Path:
    """A copy of the built data directory, for one test to damage."""
    copy = tmp_path / "data"
    shutil.copytree(built, copy)
    # The import's connection is still open in this process: its last checkpoints may be in
    # the write-ahead log only. Moved into the main file, a damage to that file is a damage
    # to the data (deleting the log, as the damages do, loses nothing).
    with closing(sqlite3.connect(copy / "checkpoints.sqlite")) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return copy


def command_args(command: str, data_dir: Path) -> list[str]:
    common = ["--data-dir", str(data_dir), "--thread", THREAD, "--budget", BUDGET]
    if command == "context":
        return ["context", "ROE?", *common]
    if command == "import":
        records = subject_records(["kyoto"], prefix="n")
        path = data_dir.parent / "more.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
        return ["import", str(path), *common]
    return [command, *common]


def garble(path: Path) -> None:
    """Overwrite the file's header, as a half-written or foreign file would have it."""
    with path.open("r+b") as handle:
        handle.write(b"this is no sqlite database header")
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def cut_in_half(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


@pytest.fixture(autouse=True)
def _native(monkeypatch: pytest.MonkeyPatch) -> None:
    without_models(monkeypatch)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data directory built per test module (an import takes seconds)."""
    return build_data_dir(tmp_path_factory.mktemp("built"))


@pytest.fixture
def data_dir(built: Path, tmp_path: Path) -> Path:
    """The test's own copy of the built data directory, to damage."""
    return copy_of(built, tmp_path)
