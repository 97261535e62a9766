"""A real Chroma server for the tests: ``chroma run`` on a free port of 127.0.0.1, in a temp dir.

The ``chroma`` command comes with the ``chromadb`` package, next to the Python running the
tests. When no server can be had, ``start_chroma`` says why and the tests that need it are
skipped with that reason.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from langgraph_topics.bench.dev_server import free_port

START_ATTEMPTS = 3
"""Ports tried: another process may take the free port found before the server binds it."""
READY_SECONDS = 30.0


class ChromaUnavailable(RuntimeError):
    """No Chroma server can be started here (the message says why)."""


def _binary() -> str:
    beside = Path(sys.executable).parent / "chroma"
    if beside.exists():
        return str(beside)
    found = shutil.which("chroma")
    if found:
        return found
    raise ChromaUnavailable(f"no chroma command next to {sys.executable} or on PATH")


@dataclass
class ChromaServer:
    """A running server this object started; ``url`` reaches it."""

    url: str
    directory: Path
    process: subprocess.Popen[bytes]

    def delete_collections(self) -> None:
        """Delete every collection, so that the next test starts from an empty server."""
        import chromadb
        from chromadb.config import Settings

        host, _, port = self.url.removeprefix("http://").rpartition(":")
        client = chromadb.HttpClient(
            host=host, port=int(port), settings=Settings(anonymized_telemetry=False)
        )
        for collection in client.list_collections():
            client.delete_collection(collection.name)

    def stop(self) -> None:
        """Stop the server and delete its data."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        shutil.rmtree(self.directory, ignore_errors=True)


def start_chroma() -> ChromaServer:
    """Start a throw-away server on a free port of 127.0.0.1 and wait for its heartbeat.

    Raises:
        ChromaUnavailable: The command is missing or the server did not answer in time.
    """
    chroma = _binary()
    directory = Path(tempfile.mkdtemp(prefix="lgt-chroma-"))
    problem = "not started"
    for _ in range(START_ATTEMPTS):
        port = free_port()
        log = directory / f"server-{port}.log"
        with log.open("wb") as output:
            process = subprocess.Popen(
                [chroma, "run", "--path", str(directory / "data"), "--host", "127.0.0.1"]
                + ["--port", str(port)],
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        server = ChromaServer(url=f"http://127.0.0.1:{port}", directory=directory, process=process)
        problem = _wait_ready(server, log)
        if not problem:
            return server
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    shutil.rmtree(directory, ignore_errors=True)
    raise ChromaUnavailable(problem)


def _wait_ready(server: ChromaServer, log: Path) -> str:
    """Wait for the heartbeat; return why the server is not ready ('' when it is)."""
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            tail = log.read_text(errors="replace").strip()[-400:]
            return f"chroma run exited with {server.process.returncode}: {tail}"
        try:
            if httpx.get(f"{server.url}/api/v2/heartbeat", timeout=1.0).status_code == 200:
                return ""
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    return f"no heartbeat from {server.url} within {READY_SECONDS:.0f} s"
