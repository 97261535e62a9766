"""One memory per user across threads (issue 40), on the embedded profile.

The Postgres profile runs the same scenarios in ``test_user_scope_postgres.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runner import run_cli
from conversations import subject_records

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.errors import InputError
from langgraph_topics.roles.native import native_roles
from langgraph_topics.scope.threads import local_thread_id, scoped_thread_id, user_key
from langgraph_topics.settings import SCOPE_THREADS_ENV
from langgraph_topics.stores.embeddings import UseEmbedder

FACT = "My sister Greta lives in Lisbon and keeps bees on her roof."
QUESTION = "Where does my sister Greta live?"
OTHER_THREADS = {
    "t2": ["Let's plan the sourdough starter feeding schedule.", "Flour and water, twice a day."],
    "t3": ["Which tomato varieties grow well on a balcony?"],
}
HOSTILE_USERS = ["", "a\x00b", "x" * 300, "tab\there", "\x1fann-0123456789\x1f", "\ud800"]


def open_memory(data_dir: Path, **changes: Any) -> TopicMemory:
    """A native memory on the offline multilingual encoder (the default embedder)."""
    settings = Settings(data_dir=data_dir, **{"budget_tokens": 2000, **changes})
    embedder = UseEmbedder()
    return TopicMemory(settings=settings, roles=native_roles(embedder, settings), embedder=embedder)


def three_threads(memory: TopicMemory, user: str, fact: str = FACT) -> None:
    """The user states ``fact`` in thread 1, talks of other things in threads 2 and 3."""
    person = memory.user(user, scope="user")
    person.chat("t1", fact)
    for thread, lines in OTHER_THREADS.items():
        for line in lines:
            person.chat(thread, line)


def system_prompt(memory: TopicMemory, user: str, scope: str, text: str = QUESTION) -> str:
    return str(memory.user(user, scope=scope).context("t3", text)["context"]["system_prompt"])


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[TopicMemory]:
    with open_memory(tmp_path / "memory") as opened:
        yield opened


def test_a_fact_of_thread_one_is_quoted_in_thread_three_with_its_thread_and_date(
    memory: TopicMemory,
) -> None:
    three_threads(memory, "ann")
    report = memory.user("ann", scope="user").context("t3", QUESTION)
    window = report["context"]
    prompt = window["system_prompt"]
    assert "Lisbon" in prompt
    line = next(line for line in prompt.splitlines() if "Lisbon" in line)
    assert "(thread “t1”)" in line
    assert line.startswith("[20")  # its date
    assert {q["thread_id"] for q in window.get("scope_quotes", [])} == {"t1"}
    assert window["tokens"] <= window["budget"]  # invariant 6
    assert window["sections"].get("scope", 0) > 0
    # The question about something else quotes nothing of thread 1.
    assert "Lisbon" not in system_prompt(memory, "ann", "user", "Any news on quantum physics?")


def test_a_chat_turn_in_user_scope_sends_the_quote_to_the_responder(memory: TopicMemory) -> None:
    three_threads(memory, "ann")
    ann = memory.user("ann", scope="user")
    ann.chat("t3", QUESTION)
    context = memory.state(ann.thread("t3"))["context"]
    assert "Lisbon" in context["system_prompt"]
    # The quote is not a message of thread 3: nothing of thread 1 moved (invariant 1).
    assert all("Lisbon" not in m["content"] for m in memory.transcript(ann.thread("t3")))
    assert memory.check(ann.thread("t3")).ok
    assert memory.check(ann.thread("t1")).ok


def test_with_the_scope_set_to_the_thread_the_fact_is_not_quoted(memory: TopicMemory) -> None:
    three_threads(memory, "ann")
    assert "Lisbon" not in system_prompt(memory, "ann", "thread")
    assert "Lisbon" in system_prompt(memory, "ann", "user")


def test_the_default_scope_is_the_thread(tmp_path: Path) -> None:
    with open_memory(tmp_path / "m") as memory:
        assert memory.settings.memory_scope == "thread"
        three_threads(memory, "ann")
        assert memory.user("ann").scope == "thread"
        prompt = memory.user("ann").context("t3", QUESTION)["context"]["system_prompt"]
        assert "Lisbon" not in prompt
    with open_memory(tmp_path / "m", memory_scope="user") as memory:
        assert "Lisbon" in memory.user("ann").context("t3", QUESTION)["context"]["system_prompt"]


def test_a_plain_thread_window_is_unchanged_by_user_threads_beside_it(tmp_path: Path) -> None:
    """Thread scope, byte for byte: the same plain thread with and without users beside it."""
    prompts = []
    for name, with_users in (("alone", False), ("beside", True)):
        with open_memory(tmp_path / name, memory_scope="user") as memory:
            if with_users:
                three_threads(memory, "ann")
            memory.chat("t3", FACT)
            memory.chat("t3", "Which tomato varieties grow well on a balcony?")
            window = memory.context("t3", QUESTION)["context"]
            assert "scope" not in window["sections"] and "scope_quotes" not in window
            prompts.append(window["system_prompt"])
    assert prompts[0] == prompts[1]


def test_two_users_with_the_same_thread_names_never_see_each_other(memory: TopicMemory) -> None:
    three_threads(memory, "ann")
    three_threads(memory, "bob", fact="My brother Olaf moved to Tromsø to study whales.")
    ann_prompt = system_prompt(memory, "ann", "user", "Where did my brother Olaf move?")
    bob_prompt = system_prompt(memory, "bob", "user")
    assert "Olaf" not in ann_prompt and "Tromsø" not in ann_prompt
    assert "Greta" not in bob_prompt and "Lisbon" not in bob_prompt
    assert "Tromsø" in system_prompt(memory, "bob", "user", "Where did my brother Olaf move?")
    ann, bob = memory.user("ann"), memory.user("bob")
    for thread in ("t1", "t2", "t3"):
        ann_ids = {m["id"] for m in memory.transcript(ann.thread(thread))}
        bob_ids = {m["id"] for m in memory.transcript(bob.thread(thread))}
        assert ann_ids and bob_ids and not ann_ids & bob_ids
    # A plain thread of the same name is a third, separate thread.
    assert not memory.exists("t1")
    assert [t["thread_id"] for t in ann.threads()] == ["t1", "t2", "t3"]


@pytest.mark.parametrize("user", HOSTILE_USERS)
def test_hostile_user_ids_get_one_line_and_write_nothing(memory: TopicMemory, user: str) -> None:
    before = sorted(p.name for p in Path(memory.settings.data_dir).rglob("*"))
    with pytest.raises(InputError) as raised:
        memory.user(user).chat("t1", "hello")
    message = str(raised.value)
    assert "\n" not in message and message.startswith("invalid user id")
    assert sorted(p.name for p in Path(memory.settings.data_dir).rglob("*")) == before


def test_a_user_id_like_a_path_stays_inside_the_data_directory(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with open_memory(data_dir) as memory:
        memory.user("../../escaped", scope="user").chat("../t1", FACT)
        prompt = system_prompt(memory, "../../escaped", "user")
    assert "Lisbon" in prompt
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]
    assert [p.name for p in (data_dir / "users").iterdir()][0].startswith("______escaped-")


def test_a_thread_of_one_user_is_refused_to_another_user(memory: TopicMemory) -> None:
    memory.user("ann").chat("t1", FACT)
    stored = scoped_thread_id("ann", "t1")
    with pytest.raises(InputError, match="belongs to another user"):
        memory.chat(stored, "What did I say?", user_id="bob")
    assert all("What did I say" not in m["content"] for m in memory.transcript(stored))


def test_forget_leaves_nothing_of_the_user_in_any_store(memory: TopicMemory) -> None:
    three_threads(memory, "ann")
    three_threads(memory, "bob", fact="My brother Olaf moved to Tromsø to study whales.")
    memory.chat("t1", "a plain thread of the same name")
    ann = memory.user("ann")
    assert ann.remnants()
    forgotten = ann.forget()
    assert len(forgotten) == 3
    assert ann.remnants() == []
    assert ann.threads() == []
    data_dir = Path(memory.settings.data_dir)
    for path in data_dir.rglob("*"):
        if path.is_file() and path.suffix in (".jsonl", ".json"):
            text = path.read_text(encoding="utf-8", errors="replace")
            assert "Greta" not in text and "sourdough" not in text, path
    # Not even in the SQLite files' free pages or logs (deleted rows keep their bytes there).
    key = user_key("ann").encode()
    for path in [*data_dir.glob("checkpoints.sqlite*"), *(data_dir / "index").glob("*.sqlite3*")]:
        assert key not in path.read_bytes(), path
    checkpoints = b"".join(p.read_bytes() for p in data_dir.glob("checkpoints.sqlite*"))
    assert user_key("bob").encode() in checkpoints
    # Bob and the plain thread are whole.
    assert "Tromsø" in system_prompt(memory, "bob", "user", "Where did my brother Olaf move?")
    assert memory.check(memory.user("bob").thread("t1")).ok
    assert memory.check("t1").ok
    # Ann starts again from nothing.
    assert "Lisbon" not in system_prompt(memory, "ann", "user")


def test_a_new_thread_of_the_user_reads_the_others_from_its_first_turn(
    memory: TopicMemory,
) -> None:
    memory.user("ann", scope="user").chat("t1", FACT)
    assert (
        "Lisbon"
        in memory.user("ann", scope="user").context("fresh", QUESTION)["context"]["system_prompt"]
    )


def test_user_threads_are_stored_apart_from_plain_threads(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, budget_tokens=2000)
    embedder = HashEmbedder()
    with TopicMemory(
        settings=settings, roles=native_roles(embedder, settings), embedder=embedder
    ) as memory:
        memory.user("ann").chat("t1", "hello")
        memory.chat("t1", "hello")
    names = sorted(p.name for p in (tmp_path / "threads").iterdir())
    assert len(names) == 2
    assert names[0].startswith("@ann-") and not names[1].startswith("@")
    assert (tmp_path / "users").is_dir()


# ------------------------------------------------------------------ the cap on threads read


def threads_read_by_turns(
    memory: TopicMemory, monkeypatch: pytest.MonkeyPatch
) -> dict[str, list[str]]:
    """Ann's threads t1..t4 said in order, then t1 again; the threads each later turn reads.

    Returns the threads read by a turn on a new thread, then by a turn on t2 after it.
    """
    from langgraph_topics.scope import recall

    ann = memory.user("ann", scope="user")
    for name in ("t1", "t2", "t3", "t4"):
        ann.chat(name, f"Noted in {name}: my sister Greta lives in Lisbon.")
    ann.chat("t1", "Which tomato varieties grow well on a balcony?")  # t1 active again
    read: list[str] = []
    original = recall._read_thread

    def spy(memory: TopicMemory, stored_id: str, query: str, **options: Any) -> Any:
        read.append(local_thread_id(stored_id))
        return original(memory, stored_id, query, **options)

    monkeypatch.setattr(recall, "_read_thread", spy)
    runs: dict[str, list[str]] = {}
    for thread in ("new", "t2"):
        read.clear()
        ann.chat(thread, QUESTION)
        runs[thread] = list(read)
    return runs


@pytest.mark.parametrize("cap", [1, 3])
def test_a_turn_reads_only_the_most_recently_active_other_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cap: int
) -> None:
    with open_memory(tmp_path / "m", scope_threads=cap) as memory:
        runs = threads_read_by_turns(memory, monkeypatch)
        # Newest activity first: t1 (spoken in last), then t4, t3; t2 is the oldest.
        assert runs["new"] == ["t1", "t4", "t3"][:cap]
        # The new thread is now the most recent; t2 itself is never read by its own turn.
        assert runs["t2"] == ["new", "t1", "t4"][:cap]
        window = memory.state(memory.user("ann").thread("new"))["context"]
        quoted = {q["thread_id"] for q in window.get("scope_quotes", [])}
        assert quoted and quoted <= set(["t1", "t4", "t3"][:cap])  # nothing of an unread one
        # The registry still lists the threads in the order they joined.
        assert [t["thread_id"] for t in memory.user("ann").threads()] == [
            "t1", "t2", "t3", "t4", "new"
        ]  # fmt: skip


def test_a_cap_over_the_thread_count_reads_every_other_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_memory(tmp_path / "m") as memory:
        assert memory.settings.scope_threads == 8
        runs = threads_read_by_turns(memory, monkeypatch)
    assert runs["new"] == ["t1", "t4", "t3", "t2"]
    assert runs["t2"] == ["new", "t1", "t4", "t3"]


def test_thread_scope_turns_and_context_queries_leave_the_activity_order_alone(
    memory: TopicMemory,
) -> None:
    ann = memory.user("ann", scope="thread")
    for name in ("t1", "t2"):
        ann.chat(name, FACT)
    registry = memory.scope_registry
    assert registry.recent("ann") == ["t2", "t1"]  # joined order, newest first
    assert not (Path(memory.settings.data_dir) / "users" / user_key("ann") / "active.json").exists()
    memory.user("ann", scope="user").context("t1", QUESTION)  # reads, records nothing
    assert registry.recent("ann") == ["t2", "t1"]
    memory.user("ann", scope="user").chat("t1", QUESTION)
    assert registry.recent("ann") == ["t1", "t2"]


def test_the_scope_threads_setting_is_checked_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError) as raised:
        Settings(scope_threads=0)
    assert str(raised.value) == (
        "scope_threads must be at least 1 (memory_scope='thread' reads none), got 0"
    )
    monkeypatch.setenv(SCOPE_THREADS_ENV, "3")
    assert Settings().scope_threads == 3
    monkeypatch.setenv(SCOPE_THREADS_ENV, "many")
    with pytest.raises(ValueError) as raised:
        Settings()
    assert str(raised.value) == f"{SCOPE_THREADS_ENV} must be a whole number of threads, got 'many'"


# ------------------------------------------------------------------ the command line


def test_the_command_line_chats_as_a_user_forgets_and_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "cli")
    for user, thread, line in (
        ("ann", "t1", FACT),
        ("ann", "t3", "Which tomato varieties grow well on a balcony?"),
        ("bob", "t1", "My brother Olaf moved to Tromsø to study whales."),
    ):
        status, _, errors = run_cli(
            capsys, "chat", "--data-dir", data, "--user", user, "--thread", thread, stdin=line
        )
        assert status == 0, errors
    context = ("context", QUESTION, "--data-dir", data, "--user", "ann", "--thread", "t3")
    status, out, _ = run_cli(capsys, *context, "--show-prompt")
    assert status == 0 and "(thread “t1”) user: My sister Greta lives in Lisbon" in out
    status, out, _ = run_cli(capsys, *context, "--show-prompt", "--scope", "thread")
    assert status == 0 and "Lisbon" not in out
    status, out, _ = run_cli(capsys, "check", "--data-dir", data, "--user", "ann")
    assert status == 0 and "2 threads checked (t1, t3)" in out
    status, out, _ = run_cli(capsys, "forget", "--data-dir", data, "--user", "ann", "--json")
    report = json.loads(out)
    assert status == 0 and report["ok"] and sorted(report["threads_deleted"]) == ["t1", "t3"]
    status, out, _ = run_cli(capsys, "check", "--data-dir", data, "--user", "ann")
    assert status == 0 and "nothing of user 'ann' is stored" in out
    status, out, _ = run_cli(capsys, "check", "--data-dir", data, "--user", "bob")
    assert status == 0 and "1 threads checked (t1)" in out
    status, _, errors = run_cli(capsys, "topics", "--data-dir", data, "--user", "ann")
    assert status == 2 and errors == [
        f"langgraph-topics: error: no thread 'default' of that user (user key "
        f"{user_key('ann')}) in {data}"
    ]


@pytest.mark.parametrize(
    "arguments",
    [
        ("--user", ""),
        ("--user", "x" * 300),
        ("--user", "tab\there"),
        ("--thread", "\x1fann-744cb9a9fb\x1ft1"),  # a user's stored id, named directly
    ],
)
def test_the_command_line_refuses_bad_ids_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments: tuple[str, ...]
) -> None:
    data = tmp_path / "cli"
    with pytest.raises(SystemExit) as stopped:  # a usage error
        run_cli(capsys, "chat", "--data-dir", str(data), *arguments, stdin="hello")
    assert stopped.value.code == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 1 and "invalid" in errors[0]
    assert not data.exists()


def test_the_command_line_refuses_a_scope_without_a_user(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "cli"
    status, _, errors = run_cli(
        capsys, "chat", "--data-dir", str(data), "--scope", "user", stdin="hello"
    )
    assert status == 2 and errors == [
        "langgraph-topics: error: --scope needs --user (a thread without a user reads itself only)"
    ]
    assert not data.exists()


def test_the_command_line_migrates_a_thread_to_a_user(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "cli")
    assert run_cli(capsys, "chat", "--data-dir", data, "--thread", "old", stdin=FACT)[0] == 0
    status, out, errors = run_cli(
        capsys, "migrate", "--user", "ann", "--thread", "old", "--data-dir", data
    )
    assert status == 0, errors
    assert "1 threads now in the memory of user 'ann'" in out
    status, _, errors = run_cli(capsys, "transcript", "--data-dir", data, "--thread", "old")
    assert status == 2 and "no thread 'old'" in errors[0]
    status, out, _ = run_cli(
        capsys, "transcript", "--data-dir", data, "--user", "ann", "--thread", "old"
    )
    assert status == 0 and "Lisbon" in out
    status, out, _ = run_cli(
        capsys,
        "context",
        QUESTION,
        "--data-dir",
        data,
        "--user",
        "ann",
        "--thread",
        "new",
        "--show-prompt",
    )
    assert status == 2  # a thread the user never had is refused, as any unknown thread
    status, _, errors = run_cli(
        capsys, "migrate", "--user", "ann", "--thread", "nowhere", "--data-dir", data
    )
    assert status == 2 and errors == [f"langgraph-topics: error: no thread 'nowhere' in {data}"]


# ------------------------------------------------------------------ migrate --user


def test_migrate_keeps_the_history_and_a_failed_copy_loses_nothing(
    memory: TopicMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph_topics.migration import user_scope

    memory.chat("old", FACT)
    memory.chat("old", "Which tomato varieties grow well on a balcony?")
    before = memory.transcript("old")
    history = [
        s.config["configurable"]["checkpoint_id"]
        for s in memory.graph.get_state_history(memory.run_config("old"))
    ]

    def failing(*_: object) -> int:
        raise InputError("thread 'old': the copy in the user's scope failed its check: test")

    monkeypatch.setattr(user_scope, "_verify", failing)
    with pytest.raises(InputError, match="failed its check"):
        user_scope.assign_threads(memory, "ann", ["old"])
    assert memory.transcript("old") == before  # the source is whole
    assert memory.user("ann").threads() == []  # the partial copy is nobody's
    monkeypatch.undo()
    assigned = user_scope.assign_threads(memory, "ann", ["old"])
    assert assigned[0].messages == len(before) and not memory.exists("old")
    ann = memory.user("ann", scope="user")
    stored = ann.thread("old")
    assert memory.transcript(stored) == before
    copied = [
        s.config["configurable"]["checkpoint_id"]
        for s in memory.graph.get_state_history(memory.run_config(stored))
    ]
    assert copied == history  # forks and time travel see the same checkpoints
    assert "Lisbon" in ann.context("new", QUESTION)["context"]["system_prompt"]
    with pytest.raises(InputError, match="already has a thread 'old'"):
        memory.chat("old", "again")  # a new plain thread of the same name is fine ...
        user_scope.assign_threads(memory, "ann", ["old"])  # ... but ann has one already


# ------------------------------------------------------------------ a graph run


def test_a_graph_run_names_its_user_in_its_config_or_context(memory: TopicMemory) -> None:
    from langchain_core.messages import HumanMessage

    from langgraph_topics.services import TopicContext

    memory.user("ann").chat("t1", FACT)
    stored = scoped_thread_id("ann", "t1")
    payload: Any = {"messages": [HumanMessage("What did I say?", id="q1")], "mode": "chat"}
    for user in ("bob", "\x00"):
        config: Any = {"configurable": {"thread_id": stored, "user_id": user}}
        with pytest.raises(InputError) as raised:
            memory.graph.invoke(payload, config, context=TopicContext(services=memory.services))
        assert "\n" not in str(raised.value)
    with pytest.raises(InputError, match="belongs to another user"):
        memory.graph.invoke(
            payload,
            {"configurable": {"thread_id": stored}},
            context=TopicContext(services=memory.services, user_id="bob"),
        )
    # Refused before LangGraph saved the input: nothing pending for ann's next turn to finish.
    assert not memory.interrupted(stored)
    result = memory.graph.invoke(
        payload,
        {"configurable": {"thread_id": stored, "user_id": "ann"}},
        context=TopicContext(services=memory.services),
    )
    assert result["messages"][-1].type == "ai"
    said = [m["content"] for m in memory.transcript(stored) if m["role"] == "user"]
    assert said == [FACT, "What did I say?"]  # once: the refused runs left nothing


def test_a_thread_that_cannot_be_read_is_left_out_and_the_turn_answers(
    memory: TopicMemory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from langgraph_topics.errors import ThreadBusyError
    from langgraph_topics.scope import recall

    three_threads(memory, "ann")
    read = recall._read_thread

    def busy_t2(memory: TopicMemory, stored_id: str, query: str, **options: Any) -> Any:
        if stored_id.endswith("t2"):
            raise ThreadBusyError("thread 't2' is busy")
        return read(memory, stored_id, query, **options)

    monkeypatch.setattr(recall, "_read_thread", busy_t2)
    ann = memory.user("ann", scope="user")
    assert ann.chat("t3", QUESTION)
    assert "Lisbon" in memory.state(ann.thread("t3"))["context"]["system_prompt"]
    assert any("thread 't2' not read" in r.getMessage() for r in caplog.records)


def test_split_history_of_another_thread_is_quoted_too(tmp_path: Path) -> None:
    """Messages already split into the other thread's topics are found, not only its tail."""
    with open_memory(tmp_path / "m", budget_tokens=600, keep_recent=6) as memory:
        ann = memory.user("ann", scope="user")
        records = subject_records(["kyoto", "stocks", "sourdough"], prefix="a")
        assert ann.import_messages("history", records) == len(records)
        memory.wait_idle()
        stored = ann.thread("history")
        topics = memory.topics(stored)
        assert topics, "the import should have split into topics"
        held = set(memory.services.stores(stored).topic_store.message_ids())  # split ones
        window = ann.context("new", "Which neighbourhood in Kyoto is best to stay in?")["context"]
        quoted = {q["message_id"] for q in window.get("scope_quotes", [])}
        assert quoted & held, "a message from the other thread's topics should be quoted"
        assert "Gion" in window["system_prompt"]
