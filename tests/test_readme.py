"""Every Python block of README.md and of the docs pages (docs/*.md) runs as written, and their
examples hold.

The blocks are read from the files themselves, never copied. Each runs in a fresh subprocess in its
own empty directory, offline (model and LangGraph variables removed from the environment); they
run a few at a time (``PARALLEL``), each given ``TIMEOUT`` seconds from its own start, so that a
busy machine slows the test down instead of failing the blocks started first. A block written
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
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from llm_wire import FakeOpenAI, Reply

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
DOC_FILES = [README, *sorted((ROOT / "docs").glob("*.md"))]
"""The README and every docs page: the files whose Python blocks run."""
NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>.+?)\s*-->")
ON_TEST_SERVER = re.compile(r"<!--\s*runs against a local OpenAI-compatible test server\s*-->")
OFFLINE_ENV = re.compile(r"^(LANGGRAPH_TOPICS_|OPENAI_|ANTHROPIC_|LANGSMITH_|LANGCHAIN_)")
TIMEOUT = 180
"""Seconds a block may run, from its own start."""
PARALLEL = max(2, min(4, os.cpu_count() or 2))
"""Blocks running at once: each loads the embedder and runs turns, mostly on the CPU."""

EXPECTED_OUTPUT = {
    "Open the graph in LangGraph Studio": ["{'event': 'split', ", "{'event': 'recall_cue', "],
}
"""Text a block of the section must print (what its comments promise)."""


@dataclass(frozen=True)
class Block:
    """One ```python block of the README or of a docs page."""

    path: str
    """The file, relative to the repository root (``README.md``, ``docs/api.md``)."""
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
        return f"{Path(self.path).stem}-line{self.line}-{slug}"

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def headings(text: str) -> list[str]:
    """The Markdown headings of a text, in order, leaving out ``#`` lines of fenced code."""
    found: list[str] = []
    fenced = False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"^#+ (.+)$", line)):
            found.append(heading.group(1))
    return found


def readme_blocks(text: str, path: str = "README.md") -> list[Block]:
    """A file's Python blocks in order, each with its section and its marker, if any."""
    blocks: list[Block] = []
    for match in re.finditer(r"^```python\n(.*?)^```[ \t]*$", text, flags=re.S | re.M):
        before = text[: match.start()]
        sections = headings(before)
        previous = before.rstrip("\n").rsplit("\n", 1)[-1].strip()
        marker = NOT_RUN.fullmatch(previous)
        blocks.append(
            Block(
                path=path,
                line=before.count("\n") + 1,
                section=sections[-1] if sections else "",
                code=match.group(1),
                not_run=marker.group("reason") if marker else None,
                on_test_server=ON_TEST_SERVER.fullmatch(previous) is not None,
            )
        )
    return blocks


def all_text() -> str:
    """The README and every docs page, one after the other."""
    return "\n".join(path.read_text("utf-8") for path in DOC_FILES)


BLOCKS = [
    block
    for path in DOC_FILES
    for block in readme_blocks(path.read_text("utf-8"), path.relative_to(ROOT).as_posix())
]


def _offline_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not OFFLINE_ENV.match(k)}
    return {**env, "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8"}


@dataclass(frozen=True)
class Ran:
    """How a block's subprocess ended."""

    returncode: int | None
    """None: it ran over ``TIMEOUT`` and was killed."""
    out: str
    err: str


def _run(code: str, where: Path, env: dict[str, str]) -> Ran:
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=where,
            env=env,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired as late:
        return Ran(None, str(late.stdout or ""), str(late.stderr or ""))
    return Ran(done.returncode, done.stdout, done.stderr)


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Future[Ran]]]:
    """Every runnable block queued, each to run in its own empty directory (by block name)."""
    env = _offline_env()
    server = FakeOpenAI()
    server.on("responder", lambda _: Reply(text="We decided on Kyoto in April."))
    served = {**env, "OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": server.url}
    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        running = {
            block.name: pool.submit(
                _run,
                block.code,
                tmp_path_factory.mktemp(block.name),
                served if block.on_test_server else env,
            )
            for block in BLOCKS
            if block.not_run is None
        }
        yield running
        for future in running.values():  # a failed test leaves the queued blocks unstarted
            future.cancel()
    server.close()


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_readme_block_runs(block: Block, started: dict[str, Future[Ran]]) -> None:
    compile(block.code, block.where, "exec")  # even a block that is not run
    if block.not_run is not None:
        pytest.skip(f"{block.where} not run: {block.not_run}")
    ran = started[block.name].result()
    if ran.returncode is None:
        pytest.fail(f"{block.where} ran over {TIMEOUT} s")
    assert ran.returncode == 0, f"{block.where} failed:\n{ran.err[-3000:]}"
    for expected in EXPECTED_OUTPUT.get(block.section, []):
        assert expected in ran.out, f"{block.where} should print {expected!r}; got:\n{ran.out}"


def test_block_names_are_unique() -> None:
    assert len({b.name for b in BLOCKS}) == len(BLOCKS)


def test_only_marked_blocks_are_skipped() -> None:
    text = all_text()
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
    # The README's three ways to use it run too, not only the docs pages' longer versions.
    assert sum(b.path == "README.md" for b in run) >= 3


def test_block_reader_finds_markers_and_sections() -> None:
    text = "\n".join(
        [
            "# Page",
            "## One",
            "```python",
            "a = 1",
            "```",
            "```bash",
            "# a comment, not a heading",
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
    first, second = readme_blocks(text, "docs/page.md")
    assert (first.section, first.code, first.not_run, first.line) == ("One", "a = 1\n", None, 3)
    assert (second.section, second.not_run) == ("Two", "needs an API key")
    assert (first.name, first.where) == ("page-line3-one", "docs/page.md:3")
    assert headings("# Title\n```python\n# code\n```\n## Part") == ["Title", "Part"]


def test_tuning_log_example_is_a_line_the_defaults_can_write() -> None:
    from langgraph_topics.activation.grey import dormancy_threshold
    from langgraph_topics.settings import Settings

    text = all_text()
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

    text = all_text()
    found = re.search(r"`alice` → `threads/([^/`]+)/`", text)
    assert found is not None and found[1] == thread_directory_name("alice")
    assert "threads/<thread>/" not in text  # the folder always carries the hash
