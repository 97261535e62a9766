from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol, TypeVar

import pytest
from chroma_server import ChromaServer, ChromaUnavailable, start_chroma
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from postgres_server import PostgresServer, PostgresUnavailable, start_postgres

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.roles.native import native_roles
from langgraph_topics.roles.protocols import Roles
from langgraph_topics.splitting.background import BackgroundSplits
from langgraph_topics.stores.base_store_topics import BaseStoreTopicStore
from langgraph_topics.stores.embeddings import UseEmbedder
from langgraph_topics.stores.topic_store import JsonlTopicStore

# Fixture modules of the damaged-store and full-disk tests (``pytest_plugins``): their asserts
# report as tests'.
pytest.register_assert_rewrite("damaged_data")
pytest.register_assert_rewrite("small_disks")

_background: weakref.WeakSet[BackgroundSplits] = weakref.WeakSet()
_started = BackgroundSplits.__init__


def _recorded(self: BackgroundSplits, *args: object, **kwargs: object) -> None:
    _started(self, *args, **kwargs)  # type: ignore[arg-type]
    _background.add(self)


BackgroundSplits.__init__ = _recorded  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _background_splits_end_with_their_test() -> Iterator[None]:
    """A split a test left planning (a memory it did not close) ends before the next test.

    Model-backed splits land after the reply, on a worker: one still running would log its
    warnings into the next test's output (an in-process CLI prints every warning).
    """
    yield
    for splits in list(_background):
        splits.wait(timeout=60)


DATA = Path(__file__).parent / "data"

MemoryFactory = Callable[..., TopicMemory]


STORE_PROFILE_MODULES = ("test_lifecycle", "test_activation", "test_branches", "test_review")
"""Modules whose ``make_memory`` tests run once per store profile: ``embedded`` and ``postgres``
(import, chat, split, activation, recall cues, context queries, forks and ``check``)."""
FILES_ONLY_TESTS = (
    "test_check_names_a_duplicated_id_with_its_files_and_a_damaged_line",
    "test_a_dormant_topic_whose_file_is_gone_is_not_activated_and_the_turn_goes_on",
)
"""Tests of those modules that damage the embedded topic files themselves: embedded only."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    module = metafunc.module.__name__.rsplit(".", 1)[-1]
    if (
        "store_profile" in metafunc.fixturenames
        and module in STORE_PROFILE_MODULES
        and metafunc.function.__name__ not in FILES_ONLY_TESTS
    ):
        metafunc.parametrize("store_profile", ["embedded", "postgres"], indirect=True)


@pytest.fixture
def store_profile(request: pytest.FixtureRequest) -> str:
    """The store profile ``make_memory`` builds on (``embedded`` unless parametrized)."""
    return str(getattr(request, "param", "embedded"))


@pytest.fixture
def make_memory(
    tmp_path: Path,
    store_profile: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[MemoryFactory]:
    """Build TopicMemory instances on a fresh data directory; closes them afterwards.

    Under the ``postgres`` profile the first memory uses a fresh database, which the
    environment names too (``LANGGRAPH_TOPICS_STORE``, ``LANGGRAPH_TOPICS_POSTGRES_URI``), so a
    process the test starts opens the same; every further memory gets a database of its own.
    The test is skipped, with the reason, when no PostgreSQL server can be had.
    """
    made: list[TopicMemory] = []
    server: PostgresServer | None = None
    if store_profile == "postgres":
        server = request.getfixturevalue("postgres_server")
        monkeypatch.setenv("LANGGRAPH_TOPICS_STORE", "postgres")
        monkeypatch.setenv("LANGGRAPH_TOPICS_POSTGRES_URI", request.getfixturevalue("postgres_uri"))

    def factory(budget: int = 1500, roles: Roles | None = None, **settings: object) -> TopicMemory:
        if server is not None and made:
            settings.setdefault(
                "postgres_uri", server.create_database(f"t{os.getpid()}_{next(_databases)}")
            )
        memory = TopicMemory(
            settings=Settings(
                data_dir=tmp_path / f"memory{len(made)}", budget_tokens=budget, **settings
            ),  # type: ignore[arg-type]
            roles=roles,
        )
        made.append(memory)
        return memory

    yield factory
    for memory in made:
        memory.close()


@pytest.fixture(scope="session")
def embedder() -> UseEmbedder:
    return UseEmbedder()


@pytest.fixture
def roles(embedder: UseEmbedder) -> Roles:
    return native_roles(embedder)


class _Stoppable(Protocol):
    def stop(self) -> None: ...


_Server = TypeVar("_Server", bound=_Stoppable)


def _running(
    start: Callable[[], _Server], unavailable: type[Exception], name: str
) -> Iterator[_Server]:
    """Start a server for a session fixture, and stop it after (skip when it cannot start)."""
    try:
        server = start()
    except unavailable as error:
        pytest.skip(f"{name} unavailable: {error}")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL server for the session (skipped, with the reason, when none can start)."""
    yield from _running(start_postgres, PostgresUnavailable, "PostgreSQL")


_databases = iter(range(1, 1_000_000))


@pytest.fixture
def postgres_uri(postgres_server: PostgresServer) -> str:
    """The URI of a fresh, empty database on the session's server."""
    return postgres_server.create_database(f"t{os.getpid()}_{next(_databases)}")


@pytest.fixture(scope="session")
def chroma_server() -> Iterator[ChromaServer]:
    """A real Chroma server for the session (skipped, with the reason, when none can start)."""
    yield from _running(start_chroma, ChromaUnavailable, "Chroma server")


@pytest.fixture
def chroma_url(chroma_server: ChromaServer) -> str:
    """The URL of the session's Chroma server, emptied of every collection for this test."""
    chroma_server.delete_collections()
    return chroma_server.url


AnyStore = JsonlTopicStore | BaseStoreTopicStore
Opener = Callable[..., AnyStore]
"""Opens one thread of a topic store: ``opener(visible=None)``."""


@pytest.fixture(params=["jsonl", "memory", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """Both topic stores on one thread: the JSONL files, and ``BaseStore`` in memory and on
    PostgreSQL (``test_base_store_topics`` has its own, with a hostile thread id)."""
    if request.param == "jsonl":
        return lambda visible=None: JsonlTopicStore(tmp_path, visible=visible)
    store: BaseStore = (
        InMemoryStore() if request.param == "memory" else request.getfixturevalue("postgres_store")
    )
    return lambda visible=None: BaseStoreTopicStore(store, "t", visible=visible)


@pytest.fixture
def postgres_store(postgres_uri: str) -> Iterator[BaseStore]:
    """A ``PostgresStore`` on a fresh database of the test server, its tables set up."""
    from langgraph.store.postgres import PostgresStore

    with PostgresStore.from_conn_string(postgres_uri) as store:
        store.setup()
        yield store
