"""Every Python block of README.md runs as written, and the README's examples hold.

The blocks are read from README.md itself, never copied. Each runs in a fresh subprocess in its
own empty directory, offline (model and LangGraph variables removed from the environment); all
of them are started at once, so the test takes as long as the slowest block. A block written
for a real provider is marked with ``<!-- runs against a local OpenAI-compatible test server -->``
on the line before its fence: it runs with ``OPENAI_BASE_URL`` pointing at the test suite's
OpenAI-compatible server on 127.0.0.1 (the real ``langchain-openai`` client, a fake key). A block
that cannot run here at all is marked ``<!-- not run: <why> -->``: it is compiled, then skipped
(pytest counts the skips).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from llm_wire import FakeOpenAI, Reply

README = Path(__file__).parent.parent / "README.md"
NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>.+?)\s*-->")
ON_TEST_SERVER = re.compile(r"<!--\s*runs against a local OpenAI-compatible test server\s*-->")
OFFLINE_ENV = re.compile(r"^(LANGGRAPH_TOPICS_|OPENAI_|ANTHROPIC_|LANGSMITH_|LANGCHAIN_)")
TIMEOUT = 180

EXPECTED_OUTPUT = {
    "Open the graph in LangGraph Studio": ["{'event': 'split', ", "{'event': 'recall_cue', "],
}
"""Text a block of the section must print (what its comments promise)."""


@dataclass(frozen=True)
class Block:
    """One ```python block of the README."""

    line: int
    """Line number of its opening fence."""
    section: str
    code: str
    not_run: str | None
    """Why it is not run (its marker's reason), or None."""
    on_test_server: bool = False
    """Whether it runs against the local OpenAI-compatible test server."""

    @property
    def name(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.section.lower()).strip("-")
        return f"line{self.line}-{slug}"


def readme_blocks(text: str) -> list[Block]:
    """The README's Python blocks in order, each with its section and its marker, if any."""
    blocks: list[Block] = []
    for match in re.finditer(r"^```python\n(.*?)^```[ \t]*$", text, flags=re.S | re.M):
        before = text[: match.start()]
        headings = re.findall(r"^##+ (.+)$", before, flags=re.M)
        previous = before.rstrip("\n").rsplit("\n", 1)[-1].strip()
        marker = NOT_RUN.fullmatch(previous)
        blocks.append(
            Block(
                line=before.count("\n") + 1,
                section=headings[-1] if headings else "",
                code=match.group(1),
                not_run=marker.group("reason") if marker else None,
                on_test_server=ON_TEST_SERVER.fullmatch(previous) is not None,
            )
        )
    return blocks


BLOCKS = readme_blocks(README.read_text("utf-8"))


def _offline_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not OFFLINE_ENV.match(k)}
    return {**env, "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8"}


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[int, subprocess.Popen[str]]]:
    """Every runnable block started at once, each in its own empty directory."""
    running: dict[int, subprocess.Popen[str]] = {}
    env = _offline_env()
    server = FakeOpenAI()
    server.on("responder", lambda _: Reply(text="We decided on Kyoto in April."))
    served = {**env, "OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": server.url}
    for block in BLOCKS:
        if block.not_run is None:
            where = tmp_path_factory.mktemp(block.name)
            running[block.line] = subprocess.Popen(
                [sys.executable, "-c", block.code],
                cwd=where,
                env=served if block.on_test_server else env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
            )
    yield running
    for process in running.values():  # a failed test may leave one running
        if process.poll() is None:
            process.kill()
            process.communicate()
    server.close()


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_readme_block_runs(block: Block, started: dict[int, subprocess.Popen[str]]) -> None:
    compile(block.code, f"README.md:{block.line}", "exec")  # even a block that is not run
    if block.not_run is not None:
        pytest.skip(f"README.md:{block.line} not run: {block.not_run}")
    process = started[block.line]
    try:
        out, err = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail(f"README.md:{block.line} ran over {TIMEOUT} s")
    assert process.returncode == 0, f"README.md:{block.line} failed:\n{err[-3000:]}"
    for expected in EXPECTED_OUTPUT.get(block.section, []):
        assert expected in out, f"README.md:{block.line} should print {expected!r}; got:\n{out}"


def test_only_marked_blocks_are_skipped() -> None:
    text = README.read_text("utf-8")
    markers = NOT_RUN.findall(text)
    skipped = [b for b in BLOCKS if b.not_run is not None]
    # Every marker sits right before a Python block: none is left over to skip something else.
    assert len(skipped) == len(markers)
    assert all(b.not_run and ("API key" in b.not_run or "server" in b.not_run) for b in skipped)
    run = [b for b in BLOCKS if b.not_run is None]
    assert len(run) >= 3 and len(run) > len(skipped), [b.name for b in skipped]
    # The blocks written for a real provider run too, against the local test server.
    assert sum(b.on_test_server for b in run) >= 2
    sections = {b.section for b in run}
    assert {"Use it in an application", "Open the graph in LangGraph Studio"} <= sections


def test_block_reader_finds_markers_and_sections() -> None:
    text = "\n".join(
        [
            "## One",
            "```python",
            "a = 1",
            "```",
            "## Two",
            "<!-- not run: needs an API key -->",
            "```python",
            "b = 2",
            "```",
            "```bash",
            "echo no",
            "```",
        ]
    )
    first, second = readme_blocks(text)
    assert (first.section, first.code, first.not_run, first.line) == ("One", "a = 1\n", None, 2)
    assert (second.section, second.not_run) == ("Two", "needs an API key")


def test_tuning_log_example_is_a_line_the_defaults_can_write() -> None:
    from langgraph_topics.activation.grey import dormancy_threshold
    from langgraph_topics.settings import Settings

    text = README.read_text("utf-8")
    start = text.index("**The tuning log**")
    example = re.search(r"```json\n(.*?)```", text[start:], flags=re.S)
    assert example is not None
    line = json.loads(example.group(1))
    assert set(line) == {
        "time",
        "thread_id",
        "turn",
        "mode",
        "active_topics",
        "topics",
        "referenced_messages",
        "events",
        "main_window",
        "roles",
    }
    assert line["active_topics"] == sum(t["status"] == "active" for t in line["topics"].values())
    window = line["main_window"]
    assert window["tokens"] == sum(window["sections"].values()) <= window["budget"]
    defaults = Settings()
    dormancies = [e for e in line["events"] if e["kind"] == "dormant"]
    assert dormancies, "the example shows a dormancy"
    for event in dormancies:
        found = re.search(
            r"average ([\d.]+) under the dormancy threshold ([\d.]+) at (\d+) active",
            event["reason"],
        )
        assert found is not None, event
        average, threshold, active = float(found[1]), found[2], int(found[3])
        assert active > defaults.min_active  # the best min_active topics never fall asleep
        assert threshold == f"{dormancy_threshold(active):.2f}"
        for topic_id in event["topic_ids"]:
            assert line["topics"][topic_id]["status"] == "dormant"
            assert round(line["topics"][topic_id]["average"], 2) == average


def test_thread_folder_example_matches_the_code() -> None:
    from langgraph_topics.services import thread_directory_name

    text = README.read_text("utf-8")
    found = re.search(r"`alice` → `threads/([^/`]+)/`", text)
    assert found is not None and found[1] == thread_directory_name("alice")
    assert "threads/<thread>/" not in text  # the folder always carries the hash
