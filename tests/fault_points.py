"""Kill a TopicMemory process at one of its write points, then reopen what it left behind.

Used by ``test_fault_injection.py``. Run as a script (``python fault_points.py CAMPAIGN_DIR``)
this module is a *zygote*: it imports the package once, then forks a fresh child for every run,
so that a run costs the scenario, not two seconds of imports.

A write point is every call of

* ``langgraph_topics.stores.durable.append_durably`` (topic files, links, the retrieval index),
* ``langgraph_topics.stores.durable.fsync_directory``,
* ``langgraph_topics.stores.durable.replace_durably`` of a topic file's catalog (a cache the
  store rewrites after appends; here after every :data:`CATALOG_REFRESH_BYTES`, so that the
  scenarios write some), of the decoded copies of topic files and of the index's entries
  (``decoded_copies``: saved after appends and by reads that find them outgrown; here from
  :data:`DECODED_REFRESH_BYTES` on) and of the history layer's view (``history/view.cache``,
  written by ``themes``),
* ``ChromaTopicIndex.upsert`` and ``ChromaTopicIndex.set_status`` (the topic index),
* ``SqliteSaver.put`` and ``SqliteSaver.put_writes`` (the checkpointer).

They are wrapped in the child (no hook in the product): the wrapper counts the points and sends
the process ``SIGKILL`` at the chosen one: before the write, after it, or, for an append, after
writing half of its bytes (a torn line). A kill point is named by its kind and its occurrence
among the points of that kind: LangGraph writes checkpoints from a background thread, so the
global order of the points varies a little from run to run, the order within a kind does not.

The child logs the ids it sends before every call and the ids it got confirmed after it
(``events.jsonl``, one unbuffered write per line, so that a kill keeps what was logged).

A campaign runs each scenario once without a kill (to count its K points), picks kill points
with :func:`choose_kills`, and then, per kill, forks the killed run and afterwards a fresh
recovery run that reopens the data directory, checks it, runs one more turn and reports
(``recovery.json``). It ends with processes chatting at once (:func:`run_concurrently`,
:func:`run_fresh_starts`). It writes ``plan.json``; the test process reads the files and
asserts.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

THREAD = "t"
SETTINGS = {"import": (500, 6), "chat": (400, 6), "concurrent": (400, 6)}
"""Budget and ``keep_recent`` of each scenario: small, so that both split several times."""
SCENARIOS = ("import", "chat")
SUBTOPIC_LIMIT_TOKENS = {"import": 300, "chat": 300, "concurrent": 300}
"""Small, so that the import divides a topic into subtopics (and dies at its writes)."""
PARALLEL = int(os.environ.get("FAULT_PARALLEL", "3"))
"""Runs forked at once (two cores, but the runs also wait on fsync)."""
CHILD_SECONDS = 90
"""A child that has not finished by then dies of SIGALRM: a hang must not hang the tests."""
RECOVERY_USER_ID = "recovery-user"
CATALOG_REFRESH_BYTES = 1024
"""The killed runs rewrite a topic file's catalog this often (the recovery, as configured)."""
DECODED_REFRESH_BYTES = 1024
"""The killed runs save a decoded copy once its file has grown this much past it."""


# ------------------------------------------------------------------------------- scenarios


def _tool_exchange(tag: str, stamp: str | None, query: str, result: str) -> list[Any]:
    """An assistant message calling a tool, and the tool's result."""
    from langchain_core.messages import AIMessage, ToolMessage

    call_id = f"call-{tag}"
    extras = {"timestamp": stamp} if stamp else {}
    return [
        AIMessage(
            "",
            id=f"{tag}-call",
            tool_calls=[{"id": call_id, "name": "search", "args": {"q": query}}],
            additional_kwargs=dict(extras),
        ),
        ToolMessage(
            result,
            id=f"{tag}-result",
            tool_call_id=call_id,
            name="search",
            additional_kwargs=dict(extras),
        ),
    ]


def import_records() -> list[Any]:
    """60 records: seven subject blocks, with two tool exchanges inside answers."""
    from conversations import subject_records

    plain = subject_records(["stocks", "kyoto", "sourdough", "fitness"], prefix="a")
    plain += subject_records(["kyoto", "sourdough", "stocks"], prefix="b")
    records: list[Any] = []
    for record in plain:
        records.append(record)
        # After these user questions the assistant searches before it answers.
        if record["id"] == "a010":
            records += _tool_exchange(
                "ta", record["timestamp"], "Gion ryokan", "Gion Hatanaka, 32,000 yen a night"
            )
        if record["id"] == "b016":
            records += _tool_exchange(
                "tb", record["timestamp"], "PE ratio banks", "Banks trade at 5 to 7 times earnings"
            )
    return records


CHAT_LINES = [
    "I want to learn fundamental analysis of stocks. Which ratios should I start with?",
    "Can you look up a ryokan near Gion for about 30,000 yen a night?",
    "What is the difference between operating cash flow and free cash flow?",
    "Now about travel: which neighbourhood in Kyoto is best for a first visit?",
    "Is Fushimi Inari better at dawn or at sunset?",
    "My sourdough starter smells of acetone. Is it dead?",
    "How often should I feed a starter kept in the fridge?",
    "Back to stocks: is a high return on equity always good?",
]


def chat_turns() -> list[list[Any]]:
    """The input of every chat turn: one user line; one turn also carries a tool exchange."""
    from langchain_core.messages import HumanMessage

    turns: list[list[Any]] = []
    for n, line in enumerate(CHAT_LINES):
        turn: list[Any] = []
        if n == 2:  # the app searched for the ryokan asked for in the turn before
            turn += _tool_exchange("tc", None, "ryokan Gion", "Gion Hatanaka: kaiseki dinner")
        turn.append(HumanMessage(line, id=f"u{n:02d}"))
        turns.append(turn)
    return turns


def scenario_ids(scenario: str) -> list[str]:
    """Every id the scenario sends (the replies of chat turns are named by the responder)."""
    if scenario == "import":
        return [_id_of(r) for r in import_records()]
    return [str(m.id) for turn in chat_turns() for m in turn]


def _id_of(record: Any) -> str:
    return str(record["id"] if isinstance(record, dict) else record.id)


# ------------------------------------------------------------------------------- event log


class EventLog:
    """JSON lines appended with one unbuffered ``write`` each: a SIGKILL keeps what was written."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def write(self, **event: Any) -> None:
        data = (json.dumps(event) + "\n").encode("utf-8")
        with self._lock:
            os.write(self._fd, data)


def read_events(path: Path) -> list[dict[str, Any]]:
    """The events of a log (a kill cannot tear a line: each line is one ``write``)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]


# ---------------------------------------------------------------------------- the injector


class Injector:
    """Counts write points; at the chosen one kills the process (before, after, or torn).

    A kill may wait for another point to have completed first (``once_done``): LangGraph
    saves checkpoints and task writes from a thread pool, so "the writes of the turn's first
    task are saved, the checkpoint after them is not" is a state only a wait makes certain.
    """

    def __init__(self, log: EventLog, kill: dict[str, Any] | None) -> None:
        self.log = log
        self.kill = kill
        self.variant = kill["variant"] if kill else "none"
        self.count = 0
        self.started: dict[str, int] = {}
        self.completed: dict[str, int] = {}
        self._lock = threading.Lock()

    def hit(self, kind: str) -> bool:
        """Count one point; True when the process must die at it."""
        with self._lock:
            self.count += 1
            self.started[kind] = occurrence = self.started.get(kind, 0) + 1
            if self.kill is None:
                self.log.write(point=self.count, kind=kind)
                return False
            if kind != self.kill["kind"] or occurrence != self.kill["occurrence"]:
                return False
            self.log.write(kill=self.count, kind=kind, occurrence=occurrence, variant=self.variant)
            return True

    def done(self, kind: str) -> None:
        with self._lock:
            self.completed[kind] = self.completed.get(kind, 0) + 1

    def wait_for_precondition(self) -> None:
        """Wait (a few seconds at most) until the point the kill waits for has completed."""
        wanted = (self.kill or {}).get("once_done")
        deadline = time.monotonic() + 5
        while wanted and time.monotonic() < deadline:
            with self._lock:
                if self.completed.get(wanted[0], 0) >= wanted[1]:
                    return
            time.sleep(0.002)

    def point(self, kind: str, write: Callable[[], Any], half: Callable[[], Any] | None) -> Any:
        """Run one write point: the write itself, or the kill it was chosen for."""
        if self.hit(kind):
            self.wait_for_precondition()
            if self.variant == "after":
                write()
            elif self.variant == "torn" and half is not None:
                half()
            die()
        result = write()
        self.done(kind)
        return result


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def append_kind(path: Path, data: bytes) -> str:
    """What an append writes: ``append:topic-message``, ``append:retrieval-vectors.f16``…"""
    path = Path(path)
    if path.parent.name == "topics":
        if not data.strip():
            return "append:topic-newline"
        try:
            kind = json.loads(data.split(b"\n", 1)[0]).get("type", "?")
        except ValueError:
            kind = "?"
        return f"append:topic-{kind}"
    if path.parent.name == "retrieval":
        return f"append:retrieval-{path.name}"
    return f"append:{path.name}"


def install(injector: Injector) -> None:
    """Wrap every write point of the package (in this process only)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from langgraph_topics.history.view_cache import VIEW_CACHE_FILE
    from langgraph_topics.stores import decoded_copies, durable
    from langgraph_topics.stores.decoded_copies import DECODED_SUFFIX
    from langgraph_topics.stores.topic_catalog import CATALOG_SUFFIX
    from langgraph_topics.stores.topic_index import ChromaTopicIndex
    from langgraph_topics.stores.topic_store import JsonlTopicStore

    original_append = durable.append_durably
    original_fsync = durable.fsync_directory
    original_replace = durable.replace_durably
    JsonlTopicStore.CATALOG_REFRESH_BYTES = CATALOG_REFRESH_BYTES
    decoded_copies.REFRESH_BYTES = DECODED_REFRESH_BYTES

    def append_durably(path: Path, data: bytes) -> None:
        def half() -> None:  # a torn line: half of the bytes reach the disk
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            os.write(fd, data[: len(data) // 2])
            os.fsync(fd)

        injector.point(append_kind(path, data), lambda: original_append(path, data), half)

    def fsync_directory(path: Path) -> None:
        injector.point(f"fsync:{Path(path).name}", lambda: original_fsync(path), None)

    replaced_kinds = {
        CATALOG_SUFFIX: "replace:topic-catalog",
        DECODED_SUFFIX: "replace:decoded-copy",
        Path(VIEW_CACHE_FILE).suffix: "replace:history-view",
    }

    def replace_durably(path: Path, data: bytes, **options: Any) -> None:
        kind = replaced_kinds.get(Path(path).suffix)
        if kind is None:  # the other whole-file stores are not counted
            original_replace(path, data, **options)
            return
        injector.point(kind, lambda: original_replace(path, data, **options), None)

    # Modules import the functions by name: replace every reference the package holds.
    for name, module in list(sys.modules.items()):
        if module is None or name.split(".")[0] != "langgraph_topics":
            continue
        for attribute, value in list(vars(module).items()):
            if value is original_append:
                setattr(module, attribute, append_durably)
            elif value is original_fsync:
                setattr(module, attribute, fsync_directory)
            elif value is original_replace:
                setattr(module, attribute, replace_durably)

    def wrap(owner: Any, method: str, kind: str) -> None:
        original = getattr(owner, method)

        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            return injector.point(kind, lambda: original(self, *args, **kwargs), None)

        setattr(owner, method, wrapper)

    wrap(ChromaTopicIndex, "upsert", "chroma:upsert")
    wrap(ChromaTopicIndex, "set_status", "chroma:set_status")
    wrap(SqliteSaver, "put", "checkpoint:put")
    wrap(SqliteSaver, "put_writes", "checkpoint:put_writes")


# ------------------------------------------------------------------------------ the memory


def preload() -> None:
    """Import everything a run needs (before forking), and warm the token counter."""
    import chromadb  # noqa: F401
    import chromadb.api.rust  # noqa: F401
    from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: F401

    import langgraph_topics.graph.builder  # noqa: F401
    import langgraph_topics.memory  # noqa: F401
    import langgraph_topics.retrieval.message_index  # noqa: F401
    import langgraph_topics.stores.topic_index  # noqa: F401
    import langgraph_topics.stores.topic_store  # noqa: F401
    from langgraph_topics.settings import Settings
    from langgraph_topics.tokens import default_token_counter

    default_token_counter(Settings().tokenizer)("warm up")


def open_memory(scenario: str, data_dir: Path) -> Any:
    """The memory of a scenario: small budget, native roles, a hashing embedder."""
    from langgraph_topics import Settings, TopicMemory
    from langgraph_topics.bench.fakes import HashEmbedder
    from langgraph_topics.roles.native import native_roles

    budget, keep_recent = SETTINGS[scenario]
    settings = Settings(
        data_dir=data_dir,
        budget_tokens=budget,
        keep_recent=keep_recent,
        lock_timeout_seconds=60,
        subtopic_limit_tokens=SUBTOPIC_LIMIT_TOKENS[scenario],
    )
    embedder = HashEmbedder()
    return TopicMemory(settings=settings, roles=native_roles(embedder, settings), embedder=embedder)


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def run_import(memory: Any, log: EventLog) -> None:
    """Import the records in three calls; ids are confirmed as their turns complete."""
    for chunk in _chunks(import_records(), 20):
        ids = [_id_of(r) for r in chunk]
        log.write(sent=ids)

        def progress(done: int, ids: list[str] = ids) -> None:
            log.write(confirmed=ids[:done])

        memory.import_messages(THREAD, chunk, progress=progress)
        log.write(confirmed=ids)


HISTORY_AFTER_TURNS = (4, 8)
"""After these chat turns the user reviews the thread and lists its themes: the review records
the refined turns of the exchanges split since (``history/refined.jsonl``), ``themes`` writes
the view (``history/view.cache``), the second time by extending the first."""


def run_chat(memory: Any, log: EventLog) -> None:
    """Chat turn after turn (the input ids are chosen here, the replies' by the responder)."""
    for number, turn in enumerate(chat_turns(), start=1):
        ids = [str(m.id) for m in turn]
        log.write(sent=ids)
        result = memory.run_turn(THREAD, {"messages": turn, "mode": "chat"})
        log.write(confirmed=[*ids, str(result["messages"][-1].id)])
        if number in HISTORY_AFTER_TURNS:
            memory.review(THREAD)
            memory.themes(THREAD)


RUNS: dict[str, Callable[[Any, EventLog], None]] = {"import": run_import, "chat": run_chat}


def tool_shape(message: Any) -> dict[str, Any]:
    """The part of a stored message that invariant 8 is about."""
    calls = [str(c.get("id")) for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    shape: dict[str, Any] = {"id": message["id"], "role": message["role"]}
    if calls:
        shape["calls"] = calls
    if "tool_call_id" in message:
        shape["answers"] = message["tool_call_id"]
    return shape


def _report(check: Any) -> dict[str, Any]:
    return {"ok": bool(check.ok), "findings": list(check.findings), "counts": dict(check.counts)}


def recover(scenario: str, data_dir: Path, log: EventLog) -> dict[str, Any]:
    """Reopen the data directory, check it, run one more turn, check again and report."""
    from langchain_core.messages import HumanMessage

    result: dict[str, Any] = {}
    with open_memory(scenario, data_dir) as memory:
        result["check_before"] = _report(memory.check(THREAD))
        result["transcript_before"] = [m["id"] for m in memory.transcript(THREAD)]
        if scenario == "import":  # the user imports the file again, then chats
            records = import_records()
            log.write(reimport=[_id_of(r) for r in records], recovery=True)
            result["reimported"] = memory.import_messages(THREAD, records)
        question = HumanMessage(
            "Where should I stay in Kyoto, and what about my starter?", id=RECOVERY_USER_ID
        )
        log.write(sent=[RECOVERY_USER_ID], recovery=True)
        state = memory.run_turn(THREAD, {"messages": [question], "mode": "chat"})
        result["recovery_reply"] = str(state["messages"][-1].id)
        log.write(confirmed=[RECOVERY_USER_ID, result["recovery_reply"]], recovery=True)
        result["events"] = [e["kind"] for e in state.get("events", [])]
        # The history layer reads back (or makes again) what the kill left of it.
        result["themes"] = [t["theme"] for t in memory.themes(THREAD)]
        result["check_after"] = _report(memory.check(THREAD))
        transcript = memory.transcript(THREAD)
        result["transcript"] = [tool_shape(m) for m in transcript]
        values = memory.state(THREAD)
        result["total_messages"] = values.get("total_messages", 0)
        # What the thread's registry and working set see (a store may hold more: records a
        # crash cut short that the branch never recorded).
        result["topics"] = sorted(values.get("topics", {}))
        stores = memory.services.stores(THREAD)
        indexed = stores.topic_index.search("topic", k=1000, exclude_status=())
        result["indexed_topics"] = sorted(topic_id for topic_id, _ in indexed)
        # What the index holds, read without its vector search (which may miss a topic).
        result["stored_topics"] = sorted(stores.topic_index.entries())
        unsplit = {m.id for m in values.get("messages", [])}
        split = {m["id"] for m in transcript} - unsplit
        positions = getattr(stores.message_index, "position", None)
        if positions is not None:
            result["split_not_in_retrieval_index"] = sorted(split - set(positions))
        refined = stores.refined_turns
        if refined is not None:
            recorded = [i for record in refined.records() for i in record["ids"]]
            result["refined_ids"] = recorded
            result["split_ids"] = sorted(split)
        window = memory.context(THREAD, "What did the search find about the ryokan?")["context"]
        result["window"] = {
            "messages": [tool_shape(m) for m in window["messages"]],
            "referenced": [tool_shape(m) for m in window["referenced_messages"]],
        }
    return result


# ------------------------------------------------------------------------- choosing kills


def choose_kills(kinds: Sequence[str], plan: dict[str, Any]) -> list[dict[str, Any]]:
    """A deterministic sample of kill points over the points ``kinds`` of a counting run.

    ``plan["points"]`` lists ``(kind, occurrence, variant[, once_done])``: the occurrence-th
    point of that kind, killed ``before`` its write, ``after`` it, or ``torn`` (half of an
    append written); with ``once_done = (kind, occurrence)`` only once that point completed.
    The kind ``after-split`` names the occurrence-th checkpoint write after the store writes
    of the first split (the split's result). ``plan["spread"]`` adds that many points, killed
    before their write, spread evenly over the points not chosen. Points a run does not have
    are left out (the tests check what was covered).
    """
    total = len(kinds)

    def nth(kind: str, occurrence: int) -> int | None:
        seen = 0
        for n, found in enumerate(kinds, start=1):
            seen += found == kind
            if found == kind and seen == occurrence:
                return n
        return None

    def after_split(k: int) -> int | None:
        stores = [n for n in range(1, total + 1) if not kinds[n - 1].startswith("checkpoint:")]
        if not stores:
            return None
        n = stores[0]  # walk to the end of the first split, past interleaved checkpoint writes
        while n < total and (n + 1 in stores or n + 2 in stores):
            n += 1
        following = [m for m in range(n + 1, total + 1) if m not in stores]
        return following[k - 1] if len(following) >= k else None

    picks: dict[tuple[int, str], tuple[str, int] | None] = {}
    for kind, occurrence, variant, *once_done in plan["points"]:
        n = after_split(occurrence) if kind == "after-split" else nth(kind, occurrence)
        if n is not None:
            picks[n, variant] = once_done[0] if once_done else None
    rest = [n for n in range(1, total + 1) if n not in {p for p, _ in picks}]
    spread = min(plan.get("spread", 0), len(rest))
    for i in range(spread):
        picks[rest[int(len(rest) * (i + 1) / (spread + 1))], "before"] = None
    return [
        {
            "point": n,
            "kind": kinds[n - 1],
            "occurrence": kinds[:n].count(kinds[n - 1]),
            "variant": variant,
            "once_done": picks[n, variant],
        }
        for n, variant in sorted(picks)
    ]


KILL_PLAN: dict[str, dict[str, Any]] = {
    # The chat covers every kind of point, around its first split and the brief of a later one.
    "chat": {
        "points": [
            # One checkpoint per turn (durability "exit"): the first turn's is never saved,
            # then the second's, then one right after it was saved.
            ("checkpoint:put", 1, "before"),
            ("checkpoint:put", 2, "before"),
            ("checkpoint:put", 1, "after"),
            ("append:topic-topic", 1, "before"),
            ("fsync:topics", 1, "before"),
            ("append:topic-message", 1, "before"),
            ("append:topic-message", 1, "torn"),
            ("chroma:upsert", 1, "before"),
            ("fsync:retrieval", 1, "before"),
            ("append:retrieval-vectors.f16", 1, "before"),
            ("append:retrieval-vectors.f16", 1, "torn"),
            ("append:retrieval-entries.jsonl", 1, "torn"),
            ("after-split", 1, "before"),
            ("after-split", 2, "before"),
            ("append:topic-brief", 1, "before"),
            ("append:topic-brief", 1, "torn"),
            ("chroma:set_status", 1, "before"),
            ("replace:topic-catalog", 1, "before"),
            ("replace:topic-catalog", 2, "after"),
            ("replace:decoded-copy", 1, "before"),
            ("replace:decoded-copy", 1, "after"),
            ("replace:decoded-copy", 3, "before"),
            # A division into subtopics, should the chat make one (the import does; the
            # store's own campaign is in test_subtopic_store.py).
            ("append:topic-subtopics", 1, "before"),
            ("append:topic-subtopics", 1, "torn"),
            ("append:topic-subtopics", 1, "after"),
            ("append:retrieval-rekeyed.jsonl", 1, "torn"),
            # The history layer: the review's refined turns, then the view ``themes`` writes
            # (the second time extended from the first).
            ("append:refined.jsonl", 1, "before"),
            ("append:refined.jsonl", 1, "torn"),
            ("append:refined.jsonl", 1, "after"),
            ("append:refined.jsonl", 2, "torn"),
            ("replace:history-view", 1, "before"),
            ("replace:history-view", 1, "after"),
            ("replace:history-view", 2, "before"),
        ],
        "spread": 1,
    },
    # The import adds a split into two new topics at once, and the import run again after
    # the kill (each of its runs imports the whole file, so they are few).
    "import": {
        "points": [
            # The second turn's checkpoint is not saved.
            ("checkpoint:put", 2, "before"),
            ("append:topic-topic", 1, "torn"),
            ("append:topic-topic", 2, "before"),  # one new topic created, the other not yet
            ("append:topic-message", 2, "before"),  # one new topic filled, the other not yet
            ("after-split", 1, "before"),
            # A topic of the import divided into subtopics: before its record, with the record
            # torn, and with the index's re-key torn.
            ("append:topic-subtopics", 1, "before"),
            ("append:topic-subtopics", 1, "torn"),
            ("append:retrieval-rekeyed.jsonl", 1, "torn"),
        ],
        "spread": 2,  # in the second and third import calls, after confirmed ones
    },
}


# ---------------------------------------------------------------------------------- zygote


def _start(target: Callable[[], None], stderr: Path) -> int:
    """Run ``target`` in a forked child (its stderr into a file); returns the child's pid."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child
        code = 0
        try:
            fd = os.open(stderr, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            os.dup2(fd, 2)
            signal.alarm(CHILD_SECONDS)
            target()
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            sys.stderr.flush()
            os._exit(code)
    return pid


def _wait(pid: int) -> int:
    """A child's exit code, or minus the signal that killed it."""
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _fork(target: Callable[[], None], stderr: Path) -> int:
    """Run ``target`` in a forked child and wait for it."""
    return _wait(_start(target, stderr))


def run_job(job: dict[str, Any]) -> None:
    """One run (killed, or the counting one) and its recovery; writes ``status.json``."""
    root = Path(job["dir"])
    root.mkdir(parents=True, exist_ok=True)
    data_dir = root / "data"
    events = root / "events.jsonl"

    def killed_run() -> None:
        log = EventLog(events)
        install(Injector(log, job.get("kill")))
        with open_memory(job["scenario"], data_dir) as memory:
            RUNS[job["scenario"]](memory, log)
        log.write(finished=True)

    def recovery_run() -> None:
        report = recover(job["scenario"], data_dir, EventLog(events))
        (root / "recovery.json").write_text(json.dumps(report), "utf-8")

    start = time.perf_counter()
    status: dict[str, float] = {"run": _fork(killed_run, root / "stderr.txt")}
    status["run_seconds"] = round(time.perf_counter() - start, 2)
    status["recovery"] = _fork(recovery_run, root / "stderr.txt")
    status["seconds"] = round(time.perf_counter() - start, 2)
    (root / "status.json").write_text(json.dumps(status), "utf-8")


def run_jobs(jobs: Sequence[dict[str, Any]], parallel: int = PARALLEL) -> None:
    """Run jobs, ``parallel`` at a time, each in a forked process of its own."""
    queue = list(jobs)
    running: set[int] = set()
    while queue or running:
        while queue and len(running) < parallel:
            job = queue.pop(0)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    run_job(job)
                except BaseException:
                    traceback.print_exc()
                    code = 1
                finally:
                    os._exit(code)
            running.add(pid)
        pid, _ = os.wait()
        running.discard(pid)


CONCURRENT_WRITERS = [("shared", "stocks"), ("shared", "kyoto"), ("shared", "sourdough")]
CONCURRENT_WRITERS += [("other", "fitness")]
CONCURRENT_TURNS = 4


def concurrent_line(writer: int, turn: int) -> str:
    """The user line of one writer's turn (unique, so the transcript can be searched for it)."""
    thread, subject = CONCURRENT_WRITERS[writer]
    from conversations import SUBJECTS

    question = SUBJECTS[subject][turn % len(SUBJECTS[subject])][0]
    return f"[writer {writer} turn {turn}] {question}"


def run_concurrently(root: Path) -> dict[str, Any]:
    """Several processes chat at once: three on one thread, one on another; then a report."""
    root.mkdir(parents=True, exist_ok=True)
    data_dir = root / "data"

    def create() -> None:  # the data directory exists before the writers start (see below)
        with open_memory("concurrent", data_dir) as memory:
            memory.services.stores(CONCURRENT_WRITERS[0][0])

    def writer(number: int) -> None:
        thread = CONCURRENT_WRITERS[number][0]
        log = EventLog(root / f"writer-{number}.jsonl")
        with open_memory("concurrent", data_dir) as memory:
            for turn in range(CONCURRENT_TURNS):
                line = concurrent_line(number, turn)
                log.write(sent=[line])
                memory.chat(thread, line)
                log.write(confirmed=[line])

    created = _fork(create, root / "create.stderr")
    pids = [
        _start(functools.partial(writer, n), root / f"writer-{n}.stderr")
        for n in range(len(CONCURRENT_WRITERS))
    ]
    statuses = [_wait(pid) for pid in pids]

    def verify() -> None:
        report: dict[str, Any] = {}
        with open_memory("concurrent", data_dir) as memory:
            for thread in dict.fromkeys(t for t, _ in CONCURRENT_WRITERS):
                report[thread] = {
                    "check": _report(memory.check(thread)),
                    "transcript": [
                        {"id": m["id"], "role": m["role"], "content": m["content"]}
                        for m in memory.transcript(thread)
                    ],
                    "total_messages": memory.state(thread).get("total_messages", 0),
                    "topics": len(memory.topics(thread)),
                }
        (root / "report.json").write_text(json.dumps(report), "utf-8")

    verified = _fork(verify, root / "verify.stderr")
    return {"dir": str(root), "create": created, "writers": statuses, "verify": verified}


FRESH_ATTEMPTS = 3
FRESH_PROCESSES = 4


def _first_turns_at_once(root: Path, attempt: int) -> list[int]:
    """One attempt of :func:`run_fresh_starts`: the exit status of each process."""
    data_dir = root / f"attempt-{attempt}"
    data_dir.mkdir(parents=True)
    ready_read, ready_write = os.pipe()
    go_read, go_write = os.pipe()

    def first_turn(number: int) -> None:
        os.close(go_write)
        with open_memory("concurrent", data_dir) as memory:
            os.write(ready_write, b"+")
            os.read(go_read, 1)  # returns when the parent closes its end: all are ready
            memory.chat(f"thread-{number}", "Which ryokan near Gion would you suggest?")

    pids = [
        _start(functools.partial(first_turn, n), root / f"attempt-{attempt}-{n}.stderr")
        for n in range(FRESH_PROCESSES)
    ]
    ready = 0
    while ready < FRESH_PROCESSES:
        got = os.read(ready_read, FRESH_PROCESSES)
        if not got:
            break
        ready += len(got)
    os.close(go_write)
    statuses = [_wait(pid) for pid in pids]
    for fd in (ready_read, ready_write, go_read):
        os.close(fd)
    return statuses


def run_fresh_starts(root: Path) -> dict[str, Any]:
    """Processes whose first turns on a new data directory come at once, each on its thread.

    Every attempt uses a new data directory. The processes open their memory, wait until all
    of them have, and then send their first message at the same moment.
    """
    statuses = [_first_turns_at_once(root, attempt) for attempt in range(FRESH_ATTEMPTS)]
    return {"dir": str(root), "statuses": statuses}


def campaign(root: Path) -> dict[str, Any]:
    """Count each scenario's write points, then kill at a sample of them; returns the plan."""
    counting: list[dict[str, Any]] = [
        {"scenario": s, "dir": str(root / s / "count"), "kill": None} for s in SCENARIOS
    ]
    run_jobs(counting)
    plan: dict[str, Any] = {}
    kills: list[dict[str, Any]] = []
    for job in counting:
        scenario = job["scenario"]
        events = read_events(Path(job["dir"]) / "events.jsonl")
        kinds = [e["kind"] for e in events if "point" in e]
        plan[scenario] = {"count_dir": job["dir"], "kinds": kinds, "kills": []}
        for kill in choose_kills(kinds, KILL_PLAN[scenario]):
            name = f"kill-{kill['point']:03d}-{kill['variant']}"
            kills.append({"scenario": scenario, "dir": str(root / scenario / name), "kill": kill})
            plan[scenario]["kills"].append(kills[-1])
    # Longest first (an import run and its recovery import the whole file; a chat run lasts
    # until its kill), so that no slow run is left alone at the end.
    kills.sort(key=lambda job: (job["scenario"] != "import", -job["kill"]["point"]))
    run_jobs(kills)
    plan["concurrent"] = run_concurrently(root / "concurrent")
    plan["fresh"] = run_fresh_starts(root / "fresh")
    return plan


def main(argv: Sequence[str]) -> int:
    root = Path(argv[0])
    sys.path.insert(0, str(Path(__file__).parent))
    preload()
    gc.collect()
    gc.freeze()  # forked children then copy fewer pages
    plan = campaign(root)
    (root / "plan.json").write_text(json.dumps(plan, indent=1), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
