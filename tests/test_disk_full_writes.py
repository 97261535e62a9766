"""A disk that fills during an import or a chat (issue 41 item 3): writes land whole or not at all.

Write points of an import and of a chat are refused in turn, spread over each kind of point
(``disk_full``: half of a file write landed, or a checkpoint write; the disk staying full from
then on, or only that write refused). Afterwards the API has raised one typed ``StoreError``
(or, for the split written after a reply, logged it), the command line has printed one line
with status 2, and once writes work again the next chat or import completes, ``check``
passes, no topic file holds a message id twice and every message is held once. The same runs
on a real small tmpfs where one can be mounted. Last, the writes themselves: an append or a
replacement refused half-way or at its flush leaves the file as it was, and a store
re-appends no message that a cut-short split left.
"""

from __future__ import annotations

import errno
import json
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from cli_runner import run_cli as cli
from conversations import subject_records
from damaged_data import BUDGET, THREAD, command_args, copy_of
from disk_full import FullDisk, Variant, filled
from fault_points import CHAT_LINES as SCENARIO_LINES
from fault_points import import_records, open_memory
from langchain_core.messages import BaseMessage, HumanMessage
from small_disks import fill

from langgraph_topics import TopicMemory
from langgraph_topics.cli.pending_line import PREFIX, read_pending
from langgraph_topics.errors import StoreError
from langgraph_topics.services import thread_directory
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.durable import append_durably, replace_durably
from langgraph_topics.stores.topic_store import JsonlTopicStore

pytest_plugins = ["damaged_data", "small_disks"]  # the CLI's data directory, built once per module

API_THREAD = "t"
IMPORT_CHUNK = 20
CHAT_ROUNDS = 2
"""The scenario's lines are said twice: the second round's splits append to the topics the
first made, where a split cut short used to leave the copies a re-split then stored again."""


# ---------------------------------------------------------------------------------- helpers


def topic_file_duplicates(data_dir: Path) -> dict[str, list[str]]:
    """Per topic file, the message ids it holds more than once (any branch, any record)."""
    found: dict[str, list[str]] = {}
    for path in sorted(data_dir.glob("threads/*/topics/*.jsonl")):
        records = [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
        ids = Counter(r.get("id") for r in records if r.get("type") == "message")
        twice = sorted(str(i) for i, n in ids.items() if n > 1)
        if twice:
            found[path.name] = twice
    return found


def assert_sound(memory: TopicMemory, thread: str, data_dir: Path, wanted: Sequence[str]) -> None:
    """``check`` passes, no topic file repeats an id, every wanted message is held once."""
    report = memory.check(thread)
    assert report.ok, report.findings
    assert topic_file_duplicates(data_dir) == {}
    held = [m["id"] for m in memory.transcript(thread)]
    assert [i for i, n in Counter(held).items() if n > 1] == []
    assert set(wanted) <= set(held), sorted(set(wanted) - set(held))


def one_line_store_error(error: BaseException) -> None:
    """The typed error a person reads: one line naming the file the full disk refused."""
    assert isinstance(error, StoreError), repr(error)
    assert "\n" not in str(error)
    assert "disk full" in str(error), str(error)


API_SAMPLE = 8
"""Write points refused per kind (file, checkpoint) and per way the disk fills, spread from
the first to the last: every point of a chat and an import took 27 minutes, and neighbouring
points (the records of one split) fail alike."""


def count_points(run: Any) -> list[str]:
    """The kind of each write point ``run`` meets when the disk never fills, in order."""
    with filled(FullDisk()) as disk:
        run()
    return list(disk.kinds)


def spread(points: int, count: int) -> list[int]:
    """``count`` of the points ``1..points`` (all when fewer), first and last among them."""
    if points <= count:
        return list(range(1, points + 1))
    return sorted({1 + (points - 1) * n // (count - 1) for n in range(count)})


def sampled(kinds: Sequence[str], count: int = API_SAMPLE) -> list[int]:
    """Write points to refuse: ``count`` spread over the points of each kind."""
    chosen: set[int] = set()
    for kind in sorted(set(kinds)):
        points = [at for at, seen in enumerate(kinds, start=1) if seen == kind]
        chosen.update(points[i - 1] for i in spread(len(points), count))
    return sorted(chosen)


# ------------------------------------------------------------------------------ the API: chat


def chat_turns() -> list[list[BaseMessage]]:
    """The chat scenario's turns: one user line each, with ids of their own."""
    return [
        [HumanMessage(f"{line} ({round_})", id=f"r{round_}u{number:02d}")]
        for round_ in range(CHAT_ROUNDS)
        for number, line in enumerate(SCENARIO_LINES)
    ]


def chat_until_full(data_dir: Path, disk: FullDisk) -> tuple[int | None, StoreError | None]:
    """Chat the scenario's turns until a turn fails; the failed turn's index and its error."""
    with filled(disk), open_memory("chat", data_dir) as memory:
        for number, turn in enumerate(chat_turns()):
            try:
                memory.run_turn(API_THREAD, {"messages": turn, "mode": "chat"})
            except StoreError as error:
                return number, error
        memory.wait_idle(API_THREAD)  # the split after the last reply, refused or not
    return None, None


def chat_again(data_dir: Path, failed: int | None) -> None:
    """With space again: the failed turn (what the thread does not hold of it), then the rest.

    As ``chat`` does with a pending line: by its message id, never sent twice.
    """
    turns = chat_turns()
    sent = [str(m.id) for turn in turns for m in turn]
    with open_memory("chat", data_dir) as memory:
        memory.resume(API_THREAD)
        for turn in turns[failed:] if failed is not None else []:
            ids = [str(m.id) for m in turn]
            held = memory.held_ids(API_THREAD, ids) if memory.exists(API_THREAD) else set()
            fresh: list[BaseMessage] = [m for m in turn if str(m.id) not in held]
            if fresh:
                memory.run_turn(API_THREAD, {"messages": fresh, "mode": "chat"})
        memory.run_turn(API_THREAD, {"messages": [], "mode": "split"})
        memory.wait_idle(API_THREAD)
        assert_sound(memory, API_THREAD, data_dir, sent)


@pytest.fixture(scope="module")
def chat_points(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    data_dir = tmp_path_factory.mktemp("chat-count") / "data"
    return count_points(lambda: chat_until_full(data_dir, FullDisk()))


@pytest.mark.parametrize("stays", [True, False], ids=["stays-full", "one-write-refused"])
def test_a_disk_full_at_write_points_of_each_kind_in_a_chat(
    tmp_path: Path, chat_points: list[str], stays: bool
) -> None:
    assert len(chat_points) > 20  # topic files, the retrieval index, checkpoints
    assert {"file", "checkpoint"} <= set(chat_points)
    for at in sampled(chat_points):
        data_dir = tmp_path / f"at-{at}" / "data"
        disk = FullDisk(at, "partial", stays=stays)
        failed, error = chat_until_full(data_dir, disk)
        assert disk.refused, f"write point {at} never reached"
        if error is not None:
            one_line_store_error(error)
        # Else the split written after a reply was refused: logged, its messages stay unsplit.
        chat_again(data_dir, failed)


# ---------------------------------------------------------------------------- the API: import


def import_until_full(data_dir: Path, disk: FullDisk) -> StoreError | None:
    """Import the scenario's records in chunks until one fails; its error."""
    records = import_records()
    with filled(disk), open_memory("import", data_dir) as memory:
        for start in range(0, len(records), IMPORT_CHUNK):
            try:
                memory.import_messages(API_THREAD, records[start : start + IMPORT_CHUNK])
            except StoreError as error:
                return error
    return None


@pytest.fixture(scope="module")
def import_points(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    data_dir = tmp_path_factory.mktemp("import-count") / "data"
    return count_points(lambda: import_until_full(data_dir, FullDisk()))


@pytest.mark.parametrize("stays", [True, False], ids=["stays-full", "one-write-refused"])
def test_a_disk_full_at_write_points_of_each_kind_in_an_import(
    tmp_path: Path, import_points: list[str], stays: bool
) -> None:
    assert len(import_points) > 20
    records = import_records()
    wanted = [str(r["id"] if isinstance(r, dict) else r.id) for r in records]
    for at in sampled(import_points):
        data_dir = tmp_path / f"at-{at}" / "data"
        disk = FullDisk(at, "partial", stays=stays)
        error = import_until_full(data_dir, disk)
        assert disk.refused, f"write point {at} never reached"
        if error is not None:
            one_line_store_error(error)
        else:  # a write the import may do without (the .checkpointed mark): warned about
            assert not stays, f"write point {at} ({disk.refused[0]}): a full disk went unseen"
        with open_memory("import", data_dir) as memory:
            memory.import_messages(API_THREAD, records)  # importing again finishes it
            assert_sound(memory, API_THREAD, data_dir, wanted)


# --------------------------------------------------------------------------- the command line

CHAT_LINES = [f"line {n} about stocks, Kyoto and bread" for n in range(6)]


def pending_texts(data_dir: Path) -> list[str]:
    """The lines a stopped ``chat`` left pending (none when the full disk refused that file)."""
    found = [read_pending(path) for path in data_dir.glob(f"threads/*/{PREFIX}*.json")]
    return [line.text for line in found if line is not None]


def answered_once(data_dir: Path, texts: Sequence[str], never: Sequence[str] = ()) -> None:
    """Each text is one user message of the thread, none of ``never`` is; check passes."""
    with TopicMemory(data_dir=data_dir, budget_tokens=int(BUDGET)) as memory:
        users = [m["content"] for m in memory.transcript(THREAD) if m["role"] == "user"]
        assert_sound(memory, THREAD, data_dir, [])
    for text in texts:
        assert users.count(text) == 1, (text, users.count(text))
    for text in never:
        assert text not in users, text


CLI_SAMPLE = 6
"""Write points of the command line's chat refused (spread over all of them): each run is a
chat of several lines and its recovery, seconds each; the API tests above cover every point."""


def test_a_disk_full_during_the_chat_command_is_one_line_and_the_line_is_answered_once(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stdin = "".join(f"{line}\n" for line in CHAT_LINES)
    with filled(FullDisk()) as disk:
        status, _, lines = cli(capsys, *command_args("chat", copy_of(built, tmp_path)), stdin=stdin)
    assert status == 0, lines
    for at in spread(len(disk.kinds), CLI_SAMPLE):
        data_dir = copy_of(built, tmp_path / f"at-{at}")
        with filled(FullDisk(at, "partial", stays=True)):
            status, out, lines = cli(capsys, *command_args("chat", data_dir), stdin=stdin)
        assert status == 2, (at, lines)
        errors = [line for line in lines if ": error: " in line]
        assert len(errors) == 1 and "disk full" in errors[0], (at, lines)
        assert str(data_dir) in errors[0], errors  # the refused file, named
        answered = len(out.strip().splitlines())
        # The line in flight is pending, unless the full disk refused its very pending file:
        # then the error said so and the line was never taken (nor may it appear).
        in_flight = CHAT_LINES[answered : answered + 1]
        pending = pending_texts(data_dir)
        assert pending in ([], in_flight), pending
        status, out, lines = cli(capsys, *command_args("chat", data_dir), stdin="")
        assert status == 0, (at, lines)
        never = [] if pending else in_flight
        answered_once(data_dir, CHAT_LINES[:answered] + pending, never)


def test_a_disk_full_during_the_import_command_is_one_line_and_importing_again_finishes_it(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = subject_records(["kyoto", "sourdough"], prefix="n")
    conversation = tmp_path / "more.jsonl"
    conversation.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    data_dir = copy_of(built, tmp_path / "counted")
    args = ["import", str(conversation), "--data-dir", str(data_dir), "--thread", THREAD]
    args += ["--budget", BUDGET]
    with filled(FullDisk()) as disk:
        status, _, lines = cli(capsys, *args)
    assert status == 0, lines
    for at in spread(len(disk.kinds), CLI_SAMPLE):
        data_dir = copy_of(built, tmp_path / f"at-{at}")
        args[3] = str(data_dir)
        with filled(FullDisk(at, "partial", stays=True)):
            status, _, lines = cli(capsys, *args)
        assert status == 2, (at, lines)
        assert len(lines) == 1 and "disk full" in lines[0], (at, lines)
        status, _, lines = cli(capsys, *args)
        assert status == 0, (at, lines)
        with TopicMemory(data_dir=data_dir, budget_tokens=int(BUDGET)) as memory:
            assert_sound(memory, THREAD, data_dir, [r["id"] for r in records])


# ----------------------------------------------------------------------------- a real tmpfs


@pytest.fixture
def small_copy(built: Path, small_disk: Path) -> Path:
    """The built data directory on the small disk."""
    data_dir = small_disk / "data"
    shutil.copytree(built, data_dir)
    return data_dir


def test_a_real_full_disk_during_chat_leaves_no_id_twice(
    small_copy: Path, small_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines_in = [f"line {n} about stocks, Kyoto and bread" for n in range(40)]
    filler = fill(small_disk, 150_000)
    stdin = "".join(f"{line}\n" for line in lines_in)
    status, out, lines = cli(capsys, *command_args("chat", small_copy), stdin=stdin)
    assert status == 2, lines
    errors = [line for line in lines if ": error: " in line]
    assert len(errors) == 1 and "disk full" in errors[0], lines
    answered = len(out.strip().splitlines())
    pending = pending_texts(small_copy)
    filler.unlink()
    status, out, lines = cli(capsys, *command_args("chat", small_copy), stdin="")
    assert status == 0, lines
    answered_once(small_copy, lines_in[:answered] + pending)


def test_a_real_full_disk_during_import_leaves_no_id_twice(
    small_copy: Path, small_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = subject_records(["kyoto", "sourdough", "fitness", "stocks"] * 3, prefix="n")
    conversation = small_disk.parent / "more.jsonl"  # off the small disk
    conversation.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    args = ["import", str(conversation), "--data-dir", str(small_copy), "--thread", THREAD]
    filler = fill(small_disk, 60_000)
    status, _, lines = cli(capsys, *args, "--budget", BUDGET)
    assert status == 2, lines
    assert len([line for line in lines if ": error: " in line]) == 1, lines
    filler.unlink()
    status, _, lines = cli(capsys, *args, "--budget", BUDGET)
    assert status == 0, lines
    with TopicMemory(data_dir=small_copy, budget_tokens=int(BUDGET)) as memory:
        assert_sound(memory, THREAD, small_copy, [r["id"] for r in records])


def test_the_thread_directory_of_the_api_scenarios_is_where_the_topic_files_are(
    tmp_path: Path,
) -> None:
    # The duplicate check above reads the files themselves: make sure it reads some.
    data_dir = tmp_path / "data"
    chat_until_full(data_dir, FullDisk())
    assert list((thread_directory(data_dir, API_THREAD) / "topics").glob("*.jsonl"))


# ------------------------------------------------------------------- the writes themselves


def stored(message_id: str, content: str = "hello") -> StoredMessage:
    return {"id": message_id, "role": "user", "content": content}  # type: ignore[typeddict-item]


@pytest.mark.parametrize("variant", ["partial", "flush"])
def test_a_refused_append_leaves_the_file_as_it_was_and_names_it(
    tmp_path: Path, variant: Variant
) -> None:
    path = tmp_path / "lines.jsonl"
    append_durably(path, b'{"a": 1}\n')
    with filled(FullDisk(1, variant)), pytest.raises(OSError) as raised:
        append_durably(path, b'{"b": 2}\n{"c": 3}\n')
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(path)
    assert path.read_bytes() == b'{"a": 1}\n'
    with filled(FullDisk(1, variant)), pytest.raises(OSError):
        append_durably(tmp_path / "new.jsonl", b'{"a": 1}\n')
    assert not (tmp_path / "new.jsonl").exists()  # not an empty file warned about forever


@pytest.mark.parametrize("variant", ["partial", "flush"])
def test_a_refused_replacement_leaves_the_old_file_and_no_scratch_file(
    tmp_path: Path, variant: Variant
) -> None:
    path = tmp_path / "meta.json"
    replace_durably(path, b"old")
    with filled(FullDisk(1, variant)), pytest.raises(OSError) as raised:
        replace_durably(path, b"new content")
    assert raised.value.filename == str(path)
    assert [p.name for p in tmp_path.iterdir()] == ["meta.json"]
    assert path.read_bytes() == b"old"


def test_messages_split_again_take_the_records_a_cut_short_split_left(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("Stocks", "")["id"]
    store.append(topic, [stored("m1")])
    recorded = store.visible_ranges()  # what the checkpoint saved
    store.append(topic, [stored("m2"), stored("m3")])  # its checkpoint never saved
    store.set_brief(topic, "Stocks", "never recorded either")

    branch = JsonlTopicStore(tmp_path, visible=recorded)
    assert branch.locate("m2") is None
    branch.append(topic, [stored("m2"), stored("m3"), stored("m4")])
    ids = [
        json.loads(line).get("id")
        for line in branch.file_path(topic).read_bytes().splitlines()
        if json.loads(line)["type"] == "message"
    ]
    assert ids == ["m1", "m2", "m3", "m4"]  # m2 and m3 once
    assert [m["id"] for m in branch.messages(topic)] == ["m1", "m2", "m3", "m4"]
    reopened = JsonlTopicStore(tmp_path, visible=branch.visible_ranges())
    assert [m["id"] for m in reopened.messages(topic)] == ["m1", "m2", "m3", "m4"]
    assert reopened.meta(topic)["brief"] == ""  # the unrecorded brief stays unseen


def test_a_message_split_again_with_other_content_is_stored_anew(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("Stocks", "")["id"]
    recorded = store.visible_ranges()
    store.append(topic, [stored("m1", "first text")])
    branch = JsonlTopicStore(tmp_path, visible=recorded)
    branch.append(topic, [stored("m1", "edited text")])  # another branch's message
    assert [m["content"] for m in branch.messages(topic)] == ["edited text"]
    reopened = JsonlTopicStore(tmp_path, visible=branch.visible_ranges())
    assert [m["content"] for m in reopened.messages(topic)] == ["edited text"]
