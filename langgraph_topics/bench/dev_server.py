"""Start ``langgraph dev`` on a free local port (the server benchmark and its tests).

The server runs in a working directory of its own: ``langgraph dev`` keeps its in-memory
persistence (``.langgraph_api/``) in the working directory and resolves a config's file paths
(``dependencies``, a ``store.index.embed`` file) against it. So the config is copied there with
those paths made absolute, relative to the file it came from.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STARTUP_TIMEOUT = 90.0
"""Seconds ``langgraph dev`` gets to answer ``/ok`` (it imports the graph and the embedder)."""
LOG_TAIL_CHARS = 3000

OFFLINE_ENV = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
}
"""No analytics, no tracing: the server makes no request of its own."""


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_EXCEPTION_LINE = re.compile(r"^\s*[A-Za-z_][\w.]*(Error|Exception|Exit)\b.*")


def cause_line(log: str) -> str:
    """The line of a server log that says why it failed: its last exception, else its last line."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    exceptions = [line for line in lines if _EXCEPTION_LINE.match(line)]
    return (exceptions or lines or ["no output"])[-1]


class ServerStartError(RuntimeError):
    """``langgraph dev`` is missing, exited, or did not answer in time (the log's tail attached)."""


def repository_config() -> Path | None:
    """The ``langgraph.json`` of a source checkout of this package, if there is one."""
    candidate = Path(__file__).resolve().parents[2] / "langgraph.json"
    return candidate if candidate.is_file() else None


def packaged_config() -> dict[str, Any]:
    """The checkout's ``langgraph.json`` as an installed package can rebuild it (no checkout)."""
    from langgraph_topics.stores import platform_store

    return {
        "dependencies": [],
        "graphs": {"topic_memory": "langgraph_topics.graph.studio:graph"},
        "store": {"index": platform_store.index_config(f"{platform_store.__file__}:embed_texts")},
    }


def _absolute(reference: str, base: Path) -> str:
    """A ``path.py:name`` reference (or a plain path) made absolute against ``base``."""
    path, colon, name = reference.rpartition(":") if ".py:" in reference else (reference, "", "")
    return f"{(base / path).resolve()}{colon}{name}"


def portable_config(config: Path) -> dict[str, Any]:
    """``config`` read, with every file path in it resolved against the config's directory."""
    loaded: dict[str, Any] = json.loads(config.read_text("utf-8"))
    base = config.resolve().parent
    loaded["dependencies"] = [
        _absolute(dep, base) if dep.startswith((".", "/")) else dep
        for dep in loaded.get("dependencies", [])
    ]
    loaded["graphs"] = {
        name: _absolute(target, base) if ".py:" in target else target
        for name, target in loaded.get("graphs", {}).items()
    }
    index = (loaded.get("store") or {}).get("index")
    if index and ".py:" in str(index.get("embed", "")):
        index["embed"] = _absolute(index["embed"], base)
    return loaded


def free_port() -> int:
    """A TCP port nobody listens on right now, on the loopback interface."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def langgraph_executable() -> Path:
    """The ``langgraph`` command of this interpreter's environment.

    Raises:
        ServerStartError: langgraph-cli is not installed.
    """
    beside = Path(sys.executable).parent / "langgraph"
    if beside.exists():
        return beside
    found = shutil.which("langgraph")
    if found is None:
        raise ServerStartError(
            "the langgraph command is missing: pip install 'langgraph-cli[inmem]' langgraph-sdk"
        )
    return Path(found)


@dataclass
class DevServer:
    """A running ``langgraph dev``."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path
    """Everything the server wrote (stdout and stderr)."""

    def failure(self, what: str) -> ServerStartError:
        """An error: ``what`` and the log's cause line, then the log's tail on the next lines."""
        tail = _ANSI.sub("", self.log_tail())
        return ServerStartError(f"{what}: {cause_line(tail)} (log {self.log})\n{tail}")

    def log_tail(self) -> str:
        """The end of the server's log (for an error message)."""
        try:
            return self.log.read_text("utf-8", errors="replace")[-LOG_TAIL_CHARS:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the server and its workers (its whole process group), whatever state it is in."""
        if self.process.poll() is not None:
            return
        for sig, grace in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.process.wait(timeout=grace)
                return
            except subprocess.TimeoutExpired:
                continue


def _wait_ready(server: DevServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise server.failure(f"langgraph dev exited ({server.process.returncode})")
        try:
            with urllib.request.urlopen(f"{server.url}/ok", timeout=2) as response:
                if json.loads(response.read()).get("ok"):
                    return
        except (urllib.error.URLError, OSError, ValueError):
            pass
        time.sleep(0.5)
    raise server.failure(f"langgraph dev not ready in {timeout:.0f}s")


def start_dev_server(
    workdir: Path,
    *,
    config: Path | None = None,
    env: Mapping[str, str] | None = None,
    startup_timeout: float = STARTUP_TIMEOUT,
) -> DevServer:
    """Start ``langgraph dev`` on 127.0.0.1 (free port, no browser, no reload), wait until ready.

    Args:
        workdir: The server's working directory (its ``.langgraph_api/`` persistence and log).
        config: A ``langgraph.json``; by default the checkout's, else the packaged equivalent.
        env: Variables added to this process's environment (e.g. ``LANGGRAPH_TOPICS_*``).
        startup_timeout: Seconds to wait for the server to answer.

    Raises:
        ServerStartError: The server could not start (the message ends with its log's tail).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    config = config or repository_config()
    settings = portable_config(config) if config is not None else packaged_config()
    config_file = workdir / "langgraph.json"
    config_file.write_text(json.dumps(settings, indent=1), "utf-8")
    port = free_port()
    log = workdir / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [
                str(langgraph_executable()),
                "dev",
                "--no-browser",
                "--no-reload",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--config",
                str(config_file),
            ],
            cwd=workdir,
            env={**os.environ, **OFFLINE_ENV, **(env or {})},
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so stop() reaches its workers
        )
    server = DevServer(url=f"http://127.0.0.1:{port}", process=process, log=log)
    try:
        _wait_ready(server, startup_timeout)
    except BaseException:
        server.stop()
        raise
    return server


@contextmanager
def running_dev_server(
    workdir: Path,
    *,
    config: Path | None = None,
    env: Mapping[str, str] | None = None,
    startup_timeout: float = STARTUP_TIMEOUT,
) -> Iterator[DevServer]:
    """``start_dev_server`` for a ``with`` block: the server stops when the block ends."""
    server = start_dev_server(workdir, config=config, env=env, startup_timeout=startup_timeout)
    try:
        yield server
    finally:
        server.stop()
