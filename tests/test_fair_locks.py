"""Fair writers (issue 34): waiting writers of a thread are served in the order they came.

The thread locks queue their waiters, in this process (``FifoRLock``), across processes on
files (``stores/lock_queue``) and in PostgreSQL (its lock queue). The order tests wait for a
waiter to be seen queued before the next one starts, so they assert an order, never a time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.settings import LOCK_TIMEOUT_ENV
from langgraph_topics.stores.advisory_locks import AdvisoryLock, LockConnections
from langgraph_topics.stores.file_lock import FileLock
from langgraph_topics.stores.lock_queue import JOINING, LockQueue
from langgraph_topics.stores.postgres_profile import advisory_key
from langgraph_topics.stores.reentrant_lock import FifoRLock

WAIT = 120.0
"""How long a test waits for a condition before it fails (never reached when all is well)."""


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


def _tickets(lock_path: Path) -> list[str]:
    directory = LockQueue(lock_path).directory
    return sorted(n for n in os.listdir(directory) if n.isdigit()) if directory.exists() else []


# ------------------------------------------------------------------------ in this process


def test_threads_get_the_lock_in_the_order_they_asked() -> None:
    lock = FifoRLock()
    assert lock.acquire(timeout=1)
    order: list[int] = []
    threads = []
    for number in range(4):

        def take(number: int = number) -> None:
            assert lock.acquire(timeout=WAIT)
            order.append(number)
            lock.release()

        thread = threading.Thread(target=take)
        thread.start()
        threads.append(thread)
        _until(lambda count=number + 1: len(lock._waiting) == count, f"thread {number} to queue")
    lock.release()
    for thread in threads:
        thread.join()
    assert order == [0, 1, 2, 3]


def test_the_fifo_lock_is_reentrant_and_a_waiter_gives_up_after_its_timeout() -> None:
    lock = FifoRLock()
    assert lock.acquire(timeout=1) and lock.acquire(timeout=1)
    result: list[bool] = []
    waiter = threading.Thread(target=lambda: result.append(lock.acquire(timeout=0.05)))
    waiter.start()
    waiter.join()
    assert result == [False] and not lock._waiting
    lock.release()
    lock.release()
    with pytest.raises(RuntimeError):
        lock.release()
    assert lock.acquire(timeout=0)
    lock.release()


# ---------------------------------------------------------------------- across processes

_FILE_WAITER = """
import sys
from pathlib import Path
from langgraph_topics.stores.file_lock import FileLock
lock_path, name, log = sys.argv[1:4]
lock = FileLock(Path(lock_path))
assert lock.acquire(600)
with open(log, "a", encoding="utf-8") as out:
    out.write(name)
lock.release()
"""


def test_processes_get_a_file_lock_in_the_order_they_asked(tmp_path: Path) -> None:
    path, log = tmp_path / ".lock", tmp_path / "order.txt"
    holder = FileLock(path)
    assert holder.acquire(1)
    waiters = []
    for count, name in enumerate("abc", start=2):
        command = [sys.executable, "-c", _FILE_WAITER, str(path), name, str(log)]
        waiters.append(subprocess.Popen(command))
        _until(lambda count=count: len(_tickets(path)) == count, f"waiter {name} to queue")
    holder.release()
    for waiter in waiters:
        assert waiter.wait(timeout=WAIT) == 0
    assert log.read_text("utf-8") == "abc"
    assert _tickets(path) == []


def test_a_dead_waiters_ticket_does_not_hold_the_queue(tmp_path: Path) -> None:
    path = tmp_path / ".lock"
    holder = FileLock(path)
    assert holder.acquire(1)
    command = [sys.executable, "-c", _FILE_WAITER, str(path), "x", str(tmp_path / "log")]
    dead = subprocess.Popen(command)
    _until(lambda: len(_tickets(path)) == 2, "the waiter to queue")
    os.kill(dead.pid, signal.SIGKILL)
    dead.wait(timeout=WAIT)
    # A process killed while drawing its ticket leaves its unrenamed file: it is cleared too.
    (LockQueue(path).directory / f"{JOINING}999999-1").touch()
    holder.release()
    other = FileLock(path)
    assert other.acquire(5)  # the dead ticket is skipped, not waited for
    other.release()
    assert _tickets(path) == []
    assert not [n for n in os.listdir(LockQueue(path).directory) if n.startswith(JOINING)]


def test_a_file_lock_waiter_gives_up_its_place_after_the_timeout(tmp_path: Path) -> None:
    path = tmp_path / ".lock"
    holder = FileLock(path)
    assert holder.acquire(1)
    assert not FileLock(path).acquire(0.05)
    assert _tickets(path) == [_tickets(path)[0]]  # only the holder's
    holder.release()
    assert _tickets(path) == []


_ADVISORY_WAITER = """
import sys
from langgraph_topics.stores.advisory_locks import AdvisoryLock, LockConnections
uri, key, name, log = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
connections = LockConnections(uri)
lock = AdvisoryLock(key, connections)
assert lock.acquire(600)
with open(log, "a", encoding="utf-8") as out:
    out.write(name)
lock.release()
connections.close()
"""


def test_processes_get_an_advisory_lock_in_the_order_they_asked(
    postgres_uri: str, tmp_path: Path
) -> None:
    key, log = advisory_key(f"fair-test:{tmp_path.name}"), tmp_path / "order.txt"
    connections = LockConnections(postgres_uri)
    holder = AdvisoryLock(key, connections)
    assert holder.acquire(1)

    def waiting() -> int:
        with psycopg.connect(postgres_uri, autocommit=True) as connection:
            row = connection.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                " AND objid = %s",
                (key & 0xFFFFFFFF,),
            ).fetchone()
        return int(row[0]) if row else 0

    waiters = []
    try:
        for count, name in enumerate("abc", start=1):
            command = [sys.executable, "-c", _ADVISORY_WAITER, postgres_uri, str(key), name]
            waiters.append(subprocess.Popen([*command, str(log)]))
            _until(lambda count=count: waiting() == count, f"waiter {name} to queue")
        holder.release()
        for waiter in waiters:
            assert waiter.wait(timeout=WAIT) == 0
        assert log.read_text("utf-8") == "abc"
    finally:
        for waiter in waiters:
            if waiter.poll() is None:
                waiter.kill()
        connections.close()


def test_an_advisory_waiter_gives_up_after_the_timeout_and_its_connection_serves_again(
    postgres_uri: str,
) -> None:
    key = advisory_key("fair-test:timeout")
    connections = LockConnections(postgres_uri)
    try:
        holder, waiter = AdvisoryLock(key, connections), AdvisoryLock(key, connections)
        assert holder.acquire(1)
        done: list[bool] = []
        thread = threading.Thread(target=lambda: done.append(waiter.acquire(0.2)))
        thread.start()
        thread.join()
        assert done == [False]
        holder.release()
        # The connection the waiter gave back has no lock_timeout left over.
        connection = connections.take()
        row = connection.execute("SHOW lock_timeout").fetchone()
        assert row is not None and row[0] == "0"
        connections.give_back(connection)
        assert waiter.acquire(1)
        waiter.release()
    finally:
        connections.close()


# ------------------------------------------------- two processes, sixty turns, one thread

_CHATTER = """
import json, pathlib, sys, time
from langgraph_topics import Settings, TopicMemory
data_dir, name, barrier, uri = sys.argv[1:5]
extra = {"store": "postgres", "postgres_uri": uri} if uri else {}
with TopicMemory(settings=Settings(data_dir=data_dir, budget_tokens=2000, **extra)) as memory:
    barrier = pathlib.Path(barrier)
    (barrier / name).touch()
    while len(list(barrier.iterdir())) < 2:
        time.sleep(0.01)  # both start together
    for turn in range(60):
        memory.chat("shared", f"[{name}{turn}] sourdough or Kyoto, point {turn}?")
print(json.dumps({"name": name}))
"""


@pytest.mark.parametrize("profile", ["embedded", "postgres"])
def test_two_processes_sixty_turns_each_on_one_thread_none_busy_nothing_lost(
    profile: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    uri = request.getfixturevalue("postgres_uri") if profile == "postgres" else ""
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    env = {k: v for k, v in os.environ.items() if k != LOCK_TIMEOUT_ENV}  # the default, 30 s
    # One data directory is one thread's files; on the postgres profile each worker has its own.
    data = {name: tmp_path / (f"data-{name}" if uri else "data") for name in "ab"}
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _CHATTER, str(data[name]), name, str(barrier), uri],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in "ab"
    ]
    for process in processes:
        out, err = process.communicate(timeout=900)
        assert process.returncode == 0, err[-3000:]  # a ThreadBusyError would end it here
    data_dir = tmp_path / ("reader" if uri else "data")
    extra: dict[str, str] = {"store": "postgres", "postgres_uri": uri} if uri else {}
    with TopicMemory(settings=Settings(data_dir=data_dir, budget_tokens=2000, **extra)) as memory:
        report = memory.check("shared")
        assert report.ok, report.findings
        said = [m["content"] for m in memory.transcript("shared") if m["role"] == "user"]
    assert sorted(said) == sorted(
        f"[{name}{turn}] sourdough or Kyoto, point {turn}?" for name in "ab" for turn in range(60)
    )
    # Each writer's lines keep their order (a turn is one writer's, never interleaved).
    for name in "ab":
        mine = [line for line in said if line.startswith(f"[{name}")]
        assert mine == [f"[{name}{turn}] sourdough or Kyoto, point {turn}?" for turn in range(60)]
