"""``bench server-load``: many threads chatting at once through ``langgraph dev``, none lost.

The benchmark starts ``langgraph dev`` with the checkout's ``langgraph.json`` (offline native
back ends, a temporary data directory), so topics go to the server's platform store; with a
PostgreSQL URI (``postgres_uri``) the server runs the ``postgres`` profile instead
(``LANGGRAPH_TOPICS_STORE=postgres``) and the topics go to that database. Each thread sends its
turns one after another, the threads all at once (``langgraph-sdk``'s async client). Every
user message is a line of the bundled demo conversation, tagged with a unique id. Afterwards
every user message and every reply of every thread is looked for in the thread's working set
(its state, through the server) and in its topics (the platform store through the server, or
the database read directly, as another worker would): each must be found exactly once, no id of
the thread may stand twice, and the thread must account for as many messages as its durable
count (``total_messages``) says it ever added. The report gives the losses and duplicates, the
per-turn latency (p50, p90, p99) and the throughput.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import shutil
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langgraph_topics.bench.dev_server import (
    STARTUP_TIMEOUT,
    ServerStartError,
    running_dev_server,
)
from langgraph_topics.bench.report import simple_table
from langgraph_topics.settings import POSTGRES_SCHEMES, POSTGRES_URI_ENV, STORE_ENV

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore

GRAPH_ID = "topic_memory"
PAGE = 1000
"""Store items read per request while collecting a thread's topics."""
PROGRESS_SECONDS = 5.0
MODEL_VARIABLES = (
    "LANGGRAPH_TOPICS_STRONG_MODEL",
    "LANGGRAPH_TOPICS_CHEAP_MODEL",
    "LANGGRAPH_TOPICS_SPLITTER_MODEL",
    "LANGGRAPH_TOPICS_TOPIC_WINDOW_MODEL",
    "LANGGRAPH_TOPICS_BRIEF_WRITER_MODEL",
    "LANGGRAPH_TOPICS_INDEX_ROUTER_MODEL",
    "LANGGRAPH_TOPICS_RESPONDER_MODEL",
)
"""Emptied for the server: every role uses its offline native back end."""


@dataclass(frozen=True)
class LoadConfig:
    """What ``bench server-load`` runs."""

    threads: int = 10
    turns: int = 100
    timeout: float = 1800.0
    """Seconds for sending turns; when they run out no thread starts another turn."""
    run_timeout: float = 300.0
    """Seconds one run (one turn) may take before it counts as failed."""
    budget: int | None = None
    """``LANGGRAPH_TOPICS_BUDGET`` of the server (none: its default, 8,000 tokens)."""
    config: Path | None = None
    """A ``langgraph.json``; by default the checkout's (see ``dev_server``)."""
    startup_timeout: float = STARTUP_TIMEOUT
    keep: Path | None = None
    """Keep the server's directories here instead of a temporary directory removed after."""
    postgres_uri: str | None = None
    """A PostgreSQL database: the server keeps the topics there (``postgres`` profile) instead
    of in its platform store, and the check reads them from there."""

    def __post_init__(self) -> None:
        if self.threads < 1 or self.turns < 1:
            raise ValueError(f"threads and turns must be at least 1: {self.threads}, {self.turns}")
        if self.timeout <= 0 or self.run_timeout <= 0:
            raise ValueError("timeout and run_timeout must be positive")
        if self.postgres_uri is not None and not self.postgres_uri.startswith(POSTGRES_SCHEMES):
            raise ValueError("--postgres-uri must start with postgresql:// or postgres://")

    @property
    def topic_store(self) -> str:
        """Where the server keeps the topics: ``postgres`` or ``platform``."""
        return "platform" if self.postgres_uri is None else "postgres"


@dataclass
class SentTurn:
    """One user message sent, and what became of its run."""

    thread: int
    turn: int
    message_id: str
    seconds: float | None = None
    """Wall-clock time of the run, when it completed."""
    error: str | None = None
    reply_id: str | None = None
    """The id of the assistant's reply the run returned (checked like the user message)."""


@dataclass
class ThreadLoad:
    """One thread of the load and its turns."""

    number: int
    thread_id: str = ""
    sent: list[SentTurn] = field(default_factory=list)


def message_tag(thread: int, turn: int) -> str:
    """The unique id (and content prefix) of a thread's user message."""
    return f"load-t{thread:03d}-m{turn:04d}"


def turn_texts() -> list[str]:
    """The user lines the turns cycle through: the bundled demo conversation."""
    from langgraph_topics.cli.demo import load_script

    return [line["text"] for line in load_script()]


def server_env(
    data_dir: Path, budget: int | None, postgres_uri: str | None = None
) -> dict[str, str]:
    """The server's ``LANGGRAPH_TOPICS_*`` variables: offline back ends; the topics' store.

    The topics go to the platform store, or with ``postgres_uri`` to that database.
    """
    env = {name: "" for name in MODEL_VARIABLES}
    env["LANGGRAPH_TOPICS_DATA_DIR"] = str(data_dir)
    env[STORE_ENV] = "" if postgres_uri is None else "postgres"  # empty: the platform store
    env[POSTGRES_URI_ENV] = postgres_uri or ""
    if budget is not None:
        env["LANGGRAPH_TOPICS_BUDGET"] = str(budget)
    return env


def percentile(values: Sequence[float], share: float) -> float | None:
    """The ``share`` quantile of ``values`` (nearest rank), ``None`` when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


class _Progress:
    """Completed turns, shown on stderr every few seconds."""

    def __init__(self, total: int, emit: Callable[[str], None]) -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self.emit = emit
        self.started = time.monotonic()
        self.last = self.started

    def tick(self, failed: bool) -> None:
        self.done += 1
        self.failed += int(failed)
        now = time.monotonic()
        if now - self.last >= PROGRESS_SECONDS or self.done == self.total:
            self.last = now
            rate = self.done / max(now - self.started, 1e-9)
            failures = f", {self.failed} failed" if self.failed else ""
            self.emit(f"server-load: {self.done}/{self.total} turns, {rate:.1f} turns/s{failures}")


async def _drive_thread(
    client: Any,
    load: ThreadLoad,
    turns: int,
    texts: Sequence[str],
    deadline: float,
    run_timeout: float,
    progress: _Progress,
) -> None:
    thread = await client.threads.create(metadata={"bench": "server-load"})
    load.thread_id = str(thread["thread_id"])
    for turn in range(turns):
        if time.monotonic() >= deadline:
            return
        tag = message_tag(load.number, turn)
        text = texts[(load.number * 7 + turn) % len(texts)]
        sent = SentTurn(thread=load.number, turn=turn, message_id=tag)
        load.sent.append(sent)
        message = {"role": "user", "content": f"[{tag}] {text}", "id": tag}
        started = time.perf_counter()
        try:
            result = await asyncio.wait_for(
                client.runs.wait(
                    load.thread_id, GRAPH_ID, input={"messages": [message]}, raise_error=False
                ),
                run_timeout,
            )
        except TimeoutError:
            sent.error = f"run timed out after {run_timeout:.0f}s"
        except Exception as error:  # the client's HTTP errors: one line in the report
            sent.error = f"{type(error).__name__}: {error}".splitlines()[0]
        else:
            if isinstance(result, Mapping) and "__error__" in result:
                sent.error = str(result["__error__"]).splitlines()[0]
            else:
                sent.reply_id = reply_id(result, tag)
                if sent.reply_id is None:
                    sent.error = "the run returned no reply to the message"
                else:
                    sent.seconds = time.perf_counter() - started
        progress.tick(sent.error is not None)
        if sent.error is not None and "timed out" in sent.error:
            return  # the run may still hold the thread; more turns would only queue behind it


def reply_id(result: object, message_id: str) -> str | None:
    """The id of the first assistant message after ``message_id`` in a run's returned state."""
    messages = result.get("messages") if isinstance(result, Mapping) else None
    if not isinstance(messages, list):
        return None
    after = False
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        if message.get("id") == message_id:
            after = True
        elif after and message.get("type") == "ai" and isinstance(message.get("id"), str):
            return str(message["id"])
    return None


def _stored_records(items: Sequence[Mapping[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """The topic records of a thread's platform-store items as ``(seq, record)``.

    The items come as ``langgraph-sdk`` returns them (dicts); see ``base_store_topics``.
    """
    records: list[tuple[int, dict[str, Any]]] = []
    for item in items:
        value = item.get("value")
        if not isinstance(value, Mapping) or not isinstance(value.get("record"), str):
            continue  # the head item, or something this benchmark did not write
        try:
            record = json.loads(value["record"])
        except ValueError:
            continue
        seq = value.get("seq")
        if isinstance(record, dict) and isinstance(seq, int):
            record.setdefault("topic", value.get("topic"))
            records.append((seq, record))
    return records


def _visible(seq: int, ranges: Sequence[Sequence[int]] | None) -> bool:
    """Whether a record belongs to the branch of ``ranges`` (its checkpoint's ``store_ranges``)."""
    return ranges is None or seq < 0 or any(start <= seq < end for start, end in ranges)


async def _stored_items(client: Any, prefix: Sequence[str]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    while True:
        page = await client.store.search_items(list(prefix), limit=PAGE, offset=len(items))
        found = list(page.get("items", []))
        items.extend(found)
        if len(found) < PAGE:
            return items


def _occurrences(tag: str, records: Sequence[Mapping[str, Any]]) -> int:
    """How many of ``records`` are the user message ``tag``: by id, or by its tagged content.

    Only user messages count: a reply may quote the question, tag included.
    """
    return sum(
        1
        for record in records
        if record.get("role") in ("user", "human")
        and (record.get("id") == tag or str(record.get("content")).startswith(f"[{tag}]"))
    )


def _id_occurrences(message_id: str, records: Sequence[Mapping[str, Any]]) -> int:
    """How many of ``records`` carry ``message_id``."""
    return sum(1 for record in records if record.get("id") == message_id)


def _platform_head(items: Sequence[Mapping[str, Any]]) -> int:
    """The high-water mark among a thread's platform-store items (0: none)."""
    from langgraph_topics.stores.base_store_topics import HEAD_KEY

    for item in items:
        value = item.get("value")
        if item.get("key") == HEAD_KEY and isinstance(value, Mapping):
            seq = value.get("seq")
            return seq if isinstance(seq, int) else 0
    return 0


@dataclass
class _ThreadTopics:
    """A thread's topic records as the check reads them, from whichever store held them."""

    records: list[tuple[int, dict[str, Any]]]
    """Every record of every branch, as ``(seq, record)``."""
    head: int
    items: int
    """Items under the thread's namespace (the records and the head)."""
    readable: set[str] | None = None
    """The message ids a worker reading the thread's branch sees (``None``: not checked)."""


def _database_topics(store: BaseStore, thread_id: str, ranges: Any) -> _ThreadTopics:
    """A thread's topics read from the database, by the store class every worker reads with."""
    from langgraph_topics.stores.base_store_topics import BaseStoreTopicStore

    view = BaseStoreTopicStore(store, thread_id, visible=ranges)
    records = [(r.seq, {**r.record, "topic": r.topic}) for r in view.stored_records()]
    head = view.known_head()
    return _ThreadTopics(
        records=records,
        head=head,
        items=len(records) + int(head > 0),
        readable=set(view.message_ids()),
    )


async def _check_thread(
    client: Any, load: ThreadLoad, database: BaseStore | None
) -> dict[str, Any]:
    """Where each message of a thread ended up: its working set, its topics, nowhere, twice.

    The topics are read from ``database`` when the server kept them there, else from the
    server's platform store; a message counts as found in the topics only if a worker reading
    the thread's branch sees it too.
    """
    from langgraph_topics.stores.base_store_topics import thread_namespace

    state = await client.threads.get_state(load.thread_id)
    values = state.get("values") or {}
    working = [
        {"id": m.get("id"), "role": m.get("type"), "content": m.get("content")}
        for m in values.get("messages", [])
        if isinstance(m, Mapping)
    ]
    ranges = values.get("store_ranges")
    platform_items = await _stored_items(client, thread_namespace(load.thread_id))
    if database is None:
        topics = _ThreadTopics(
            records=_stored_records(platform_items),
            head=_platform_head(platform_items),
            items=len(platform_items),
        )
    else:
        topics = _database_topics(database, load.thread_id, ranges)
    visible = [record for seq, record in topics.records if _visible(seq, ranges)]
    stored = [record for record in visible if record.get("type") == "message"]
    counts: Counter[str] = Counter()
    lost: list[str] = []
    duplicated: list[str] = []
    unreadable: list[str] = []
    Occurrences = Callable[[str, Sequence[Mapping[str, Any]]], int]
    expected: list[tuple[str, str | None, Occurrences]] = [
        (sent.message_id, sent.error, _occurrences) for sent in load.sent
    ]
    expected += [(sent.reply_id, None, _id_occurrences) for sent in load.sent if sent.reply_id]
    for message_id, error, occurrences in expected:
        in_working = occurrences(message_id, working)
        in_topics = occurrences(message_id, stored)
        if in_topics and topics.readable is not None and message_id not in topics.readable:
            unreadable.append(message_id)
            in_topics = 0  # stored, but no worker would ever read it back: as good as lost
        counts["in_working_set"] += min(in_working, 1)
        counts["in_topics"] += min(in_topics, 1)
        total = in_working + in_topics
        if total == 0 and error is None:
            lost.append(message_id)
        elif total > 1:
            duplicated.append(message_id)
    # Invariant 1 over the whole thread, not only the messages this benchmark sent: every id
    # once, and as many as the thread's durable count says it ever added.
    every_id = Counter(str(m["id"]) for m in [*working, *stored] if m.get("id") is not None)
    duplicated.extend(sorted(i for i, n in every_id.items() if n > 1 and i not in duplicated))
    return {
        "thread_id": load.thread_id,
        "sent": len(load.sent),
        "failed": sum(1 for s in load.sent if s.error is not None),
        "lost": lost,
        "duplicated": duplicated,
        "unreadable": unreadable,
        "in_working_set": counts["in_working_set"],
        "in_topics": counts["in_topics"],
        "store_items": topics.items,
        "stored_head": topics.head,
        "platform_store_items": len(platform_items),
        "topics": sum(1 for record in visible if record.get("type") == "topic"),
        "total_messages": values.get("total_messages"),
        "accounted": len(every_id),
    }


async def _run_load(
    url: str, config: LoadConfig, emit: Callable[[str], None], database: BaseStore | None
) -> tuple[list[ThreadLoad], list[dict[str, Any]], float, bool]:
    from langgraph_sdk import get_client

    client = get_client(url=url, timeout=config.run_timeout)
    texts = turn_texts()
    loads = [ThreadLoad(number=n) for n in range(config.threads)]
    progress = _Progress(config.threads * config.turns, emit)
    started = time.monotonic()
    deadline = started + config.timeout
    await asyncio.gather(
        *(
            _drive_thread(client, load, config.turns, texts, deadline, config.run_timeout, progress)
            for load in loads
        )
    )
    wall = time.monotonic() - started
    timed_out = any(len(load.sent) < config.turns for load in loads)
    emit("server-load: checking every message of every thread …")
    checks = [await _check_thread(client, load, database) for load in loads if load.thread_id]
    return loads, checks, wall, timed_out


@contextmanager
def opened_database(uri: str | None) -> Iterator[BaseStore | None]:
    """The topics' database opened as another worker would (``None`` without a URI).

    Its tables are created if missing, before the server starts, so that the check can read
    the database even if no run ever reached it.

    Raises:
        StoreUnavailableError: The database cannot be reached or set up (one line, no password),
            or the ``postgres`` extra is not installed.
    """
    if uri is None:
        yield None
        return
    from langgraph_topics.stores.postgres_profile import (
        CONNECT_TIMEOUT_SECONDS,
        StoreUnavailableError,
        redacted,
    )

    try:
        import psycopg
        from langgraph.store.postgres import PostgresStore
    except ImportError as error:
        raise StoreUnavailableError(
            f"--postgres-uri needs {error.name or 'psycopg'}: "
            'pip install "langgraph-topics[postgres]"'
        ) from None
    with ExitStack() as stack:
        try:
            # A plain connection first: it fails at once, with a timeout, where the store's hangs.
            psycopg.connect(uri, connect_timeout=int(CONNECT_TIMEOUT_SECONDS)).close()
            store = stack.enter_context(PostgresStore.from_conn_string(uri))
            store.setup()
        except psycopg.Error as error:
            detail = " ".join(str(error).split()) or type(error).__name__
            raise StoreUnavailableError(
                f"--postgres-uri: cannot use PostgreSQL at {redacted(uri)}: {detail[:200]}"
            ) from None
        yield store


def run_server_load(config: LoadConfig, emit: Callable[[str], None]) -> dict[str, Any]:
    """Start ``langgraph dev``, run the load, check every message; the report as a dict.

    Raises:
        ServerStartError: ``langgraph dev`` could not start (not installed, or it failed).
        StoreUnavailableError: ``config.postgres_uri`` cannot be reached or set up.
    """
    if importlib.util.find_spec("langgraph_sdk") is None:
        raise ServerStartError(
            "langgraph-sdk is missing: pip install 'langgraph-cli[inmem]' langgraph-sdk"
        )
    work = config.keep or Path(tempfile.mkdtemp(prefix="bench-server-load-"))
    keep = config.keep is not None
    try:
        with opened_database(config.postgres_uri) as database:
            emit(
                f"server-load: starting langgraph dev (data in {work / 'data'}, topics in "
                f"{_topic_store_label(config)}) …"
            )
            with running_dev_server(
                work / "server",
                config=config.config,
                env=server_env(work / "data", config.budget, config.postgres_uri),
                startup_timeout=config.startup_timeout,
            ) as server:
                emit(
                    f"server-load: {server.url}: {config.threads} threads × {config.turns} "
                    f"turns (timeout {config.timeout:.0f}s)"
                )
                loads, checks, wall, timed_out = asyncio.run(
                    _run_load(server.url, config, emit, database)
                )
    except ServerStartError:
        keep = True  # the server's log stays for reading
        raise
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    return _report(config, loads, checks, wall, timed_out)


def _topic_store_label(config: LoadConfig) -> str:
    """Where the topics go, for people: the platform store, or the database (no password)."""
    if config.postgres_uri is None:
        return "the platform store"
    from langgraph_topics.stores.postgres_profile import redacted

    return f"PostgreSQL {redacted(config.postgres_uri)}"


def _report(
    config: LoadConfig,
    loads: Sequence[ThreadLoad],
    checks: Sequence[Mapping[str, Any]],
    wall: float,
    timed_out: bool,
) -> dict[str, Any]:
    sent = [turn for load in loads for turn in load.sent]
    seconds = [turn.seconds for turn in sent if turn.seconds is not None]
    errors = [f"{turn.message_id}: {turn.error}" for turn in sent if turn.error is not None]
    lost = [tag for check in checks for tag in check["lost"]]
    unreadable = [tag for check in checks for tag in check["unreadable"]]
    duplicated = [tag for check in checks for tag in check["duplicated"]]
    unaccounted = [
        f"{check['thread_id']}: {check['accounted']} of {check['total_messages']}"
        for check in checks
        if check.get("total_messages") is not None and check["accounted"] != check["total_messages"]
    ]

    def millis(share: float) -> float | None:
        value = percentile(seconds, share)
        return None if value is None else round(value * 1000, 1)

    return {
        "kind": "server-load",
        "threads": config.threads,
        "turns": config.turns,
        "budget": config.budget,
        "topic_store": config.topic_store,
        "topic_store_at": _topic_store_label(config),
        "sent": len(sent),
        "replies": sum(1 for turn in sent if turn.reply_id),
        "completed": len(seconds),
        "failed": len(errors),
        "lost": len(lost),
        "duplicated": len(duplicated),
        "in_working_set": sum(int(check["in_working_set"]) for check in checks),
        "in_topics": sum(int(check["in_topics"]) for check in checks),
        "topics": sum(int(check["topics"]) for check in checks),
        "store_items": sum(int(check["store_items"]) for check in checks),
        "platform_store_items": sum(int(check["platform_store_items"]) for check in checks),
        "latency_ms": {
            "p50": millis(0.50),
            "p90": millis(0.90),
            "p99": millis(0.99),
            "mean": round(statistics.fmean(seconds) * 1000, 1) if seconds else None,
            "max": round(max(seconds) * 1000, 1) if seconds else None,
        },
        "turns_per_second": round(len(seconds) / wall, 2) if wall > 0 else None,
        "wall_seconds": round(wall, 1),
        "timed_out": timed_out,
        "unaccounted": unaccounted[:20],
        "lost_ids": lost[:20],
        "unreadable_ids": unreadable[:20],
        "duplicated_ids": duplicated[:20],
        "errors": errors[:20],
        "per_thread": list(checks),
    }


def misplaced_items(report: Mapping[str, Any]) -> int:
    """Items in the platform store of a run whose topics belong in another store (want 0)."""
    return 0 if report["topic_store"] == "platform" else int(report["platform_store_items"])


def server_load_table(report: Mapping[str, Any]) -> str:
    """The report as a plain-text table."""
    latency = report["latency_ms"]

    def shown(value: float | None) -> str:
        return "-" if value is None else f"{value:.0f}"

    table = simple_table(
        [
            "threads",
            "turns",
            "sent",
            "failed",
            "lost",
            "duplicated",
            "in topics",
            "topics",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "turns/s",
        ],
        [
            [
                report["threads"],
                report["turns"],
                report["sent"],
                report["failed"],
                report["lost"],
                report["duplicated"],
                report["in_topics"],
                report["topics"],
                shown(latency["p50"]),
                shown(latency["p90"]),
                shown(latency["p99"]),
                report["turns_per_second"],
            ]
        ],
    )
    notes = [f"topics in {report['topic_store_at']}"]
    if misplaced_items(report):
        notes.append(f"{misplaced_items(report)} items in the platform store, expected none")
    if report["timed_out"]:
        notes.append("timed out: not every turn was sent")
    notes.extend(f"error {line}" for line in report["errors"][:5])
    notes.extend(f"lost {tag}" for tag in report["lost_ids"][:5])
    notes.extend(f"messages accounted for in {line}" for line in report["unaccounted"][:5])
    notes.extend(f"duplicated {tag}" for tag in report["duplicated_ids"][:5])
    return "\n".join([table, *notes])
