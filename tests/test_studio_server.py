"""``langgraph dev`` serves the exported graph offline; two turns through ``langgraph-sdk``."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LANGGRAPH = Path(sys.executable).parent / "langgraph"
STARTUP_TIMEOUT = 90.0
RUN_TIMEOUT = 60.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server and its workers (the whole process group), whatever state it is in."""
    if process.poll() is not None:
        return
    for sig, grace in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"langgraph dev exited ({process.returncode}):\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
                if json.loads(response.read()).get("ok"):
                    return
        except (urllib.error.URLError, OSError, ValueError):
            pass
        time.sleep(0.5)
    pytest.fail(f"langgraph dev not ready in {STARTUP_TIMEOUT:.0f}s:\n{log.read_text()[-3000:]}")


@pytest.fixture
def dev_server(tmp_path: Path) -> Iterator[str]:
    """A ``langgraph dev`` server on a free local port; always stopped afterwards."""
    if not LANGGRAPH.exists():
        pytest.fail(f"{LANGGRAPH} missing: install the dev extra (pip install -e '.[dev]')")
    port = _free_port()
    env = {
        **os.environ,
        "LANGGRAPH_TOPICS_DATA_DIR": str(tmp_path / "data"),
        "LANGGRAPH_TOPICS_BUDGET": "2000",
        # Offline: no analytics, no tracing.
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
    }
    log = tmp_path / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [
                str(LANGGRAPH),
                "dev",
                "--no-browser",
                "--no-reload",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--config",
                str(ROOT / "langgraph.json"),
            ],
            # The server writes its in-memory persistence (.langgraph_api/) into the working
            # directory: keep it out of the repository.
            cwd=tmp_path,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_ready(url, process, log)
        yield url
    finally:
        _stop(process)


def test_langgraph_json_points_at_the_studio_graph() -> None:
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert config["graphs"] == {"topic_memory": "langgraph_topics.graph.studio:graph"}
    from langgraph_topics.graph.studio import graph

    assert graph.checkpointer is None  # the server brings persistence
    assert set(graph.get_input_jsonschema()["properties"]) >= {"messages"}


def test_dev_server_runs_two_turns(dev_server: str) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=dev_server, timeout=RUN_TIMEOUT)
    assistants = client.assistants.search()
    assert [a["graph_id"] for a in assistants] == ["topic_memory"]
    # Studio draws the input form from this schema: a chat ``messages`` key.
    schemas = client.assistants.get_schemas(assistants[0]["assistant_id"])
    assert "messages" in schemas["input_schema"]["properties"]
    thread = client.threads.create()
    nodes: list[str] = []
    for text in [
        "Let's plan a trip to Kyoto next April.",
        "Which neighbourhood should we stay in?",
    ]:
        for chunk in client.runs.stream(
            thread["thread_id"],
            "topic_memory",
            input={"messages": [{"role": "user", "content": text}]},
            stream_mode=["updates", "custom"],
        ):
            assert chunk.event != "error", chunk.data
            if chunk.event == "updates":
                nodes.extend(chunk.data)
    # Every node's output reaches the client (and so Studio).
    assert {"estimate", "assemble", "respond", "bookkeeping"} <= set(nodes)
    state = client.threads.get_state(thread["thread_id"])
    values = state["values"]
    assert [m["type"] for m in values["messages"]] == ["human", "ai", "human", "ai"]
    assert values["turn"] == 2
    assert values["total_messages"] == 4
    assert values["context"]["recent_ids"][-1] == values["messages"][-2]["id"]
    assert values["estimate"]["budget"] == 2000
