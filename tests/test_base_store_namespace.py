"""The tool-result namespace on a LangGraph ``BaseStore`` (in memory and on Postgres)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langgraph_topics.namespace.reference import content_digest, reference_for
from langgraph_topics.stores.base_store_namespace import BaseStoreNamespaceStore
from langgraph_topics.stores.base_store_topics import thread_namespace
from langgraph_topics.stores.namespace_store import NamespaceEntryError, NamespaceStore

THREAD = "user/42: thread.with.dots"
BIG = "".join(f"line {i}: PELICAN status ok\n" for i in range(8000))  # about 200 KB


@pytest.fixture(params=["memory", "postgres"])
def base_store(request: pytest.FixtureRequest) -> Iterator[BaseStore]:
    if request.param == "memory":
        yield InMemoryStore()
        return
    from langgraph.store.postgres import PostgresStore

    with PostgresStore.from_conn_string(request.getfixturevalue("postgres_uri")) as store:
        store.setup()
        yield store


def test_entries_are_shared_content_addressed_and_bounded_in_memory(
    base_store: BaseStore,
) -> None:
    store: NamespaceStore = BaseStoreNamespaceStore(base_store, THREAD, max_bytes=300_000)
    reference = reference_for(BIG)
    assert store.put(BIG, tool="read_file") == reference == store.put(BIG)
    items = base_store.search((*thread_namespace(THREAD), "namespace"))
    assert len(items) == 1 and items[0].value["tool"] == "read_file"
    other = BIG.replace("PELICAN", "HERON")
    other_reference = store.put(other)
    assert other_reference != reference
    assert store.read(f"please read <{reference}>") == BIG  # evicted from memory, read back
    # Another worker reads what this one stored.
    worker = BaseStoreNamespaceStore(base_store, THREAD)
    assert worker.read(other_reference) == other
    assert worker.read(reference_for("never stored")) is None
    assert worker.read("not a reference") is None
    # Other threads have namespaces of their own.
    assert BaseStoreNamespaceStore(base_store, THREAD + "2").read(reference) is None


def test_hostile_text_round_trips(base_store: BaseStore) -> None:
    text = 'nul \x00, escape \x1b[0m, separators \u2028, 中文 🚀, quotes " and \\u0000'
    reference = BaseStoreNamespaceStore(base_store, THREAD).put(text)
    assert BaseStoreNamespaceStore(base_store, THREAD).read(reference) == text


def test_a_damaged_entry_is_one_line_and_is_written_again(base_store: BaseStore) -> None:
    store = BaseStoreNamespaceStore(base_store, THREAD)
    reference = store.put("the full text")
    digest = reference.rsplit("/", 1)[-1]
    namespace = (*thread_namespace(THREAD), "namespace")
    for damage in ({"content": '"another text"'}, {"content": "not json"}, {"oops": 1}):
        base_store.put(namespace, digest, damage, index=False)
        reader = BaseStoreNamespaceStore(base_store, THREAD)
        with pytest.raises(NamespaceEntryError, match=f"namespace entry {digest}.*damaged"):
            reader.read(reference)
        assert reader.put("the full text") == reference  # written again from the message
        assert BaseStoreNamespaceStore(base_store, THREAD).read(reference) == "the full text"


def test_entries_keep_the_call_and_count_reads_apart(base_store: BaseStore) -> None:
    store = BaseStoreNamespaceStore(base_store, THREAD)
    reference = store.put(BIG, tool="read_file", args={"path": "status.txt"}, summary="status")
    assert store.read(reference) == BIG
    # Another worker reads it too, and sees the first read.
    worker = BaseStoreNamespaceStore(base_store, THREAD)
    assert worker.read(reference) == BIG and worker.peek(reference) == BIG
    entry = BaseStoreNamespaceStore(base_store, THREAD).entry(reference)
    assert entry is not None and entry.key == reference and entry.content == BIG
    assert entry.tool_name == "read_file" and entry.args == {"path": "status.txt"}
    assert entry.content_summary == "status" and entry.created_at.startswith("20")
    assert entry.access_count == 2
    # The counts are not among the entries.
    assert len(base_store.search((*thread_namespace(THREAD), "namespace"))) == 1


def test_an_item_stored_before_args_and_counts_still_loads(base_store: BaseStore) -> None:
    reference = reference_for("an older entry")
    digest = reference.rsplit("/", 1)[-1]
    old = {
        "reference": reference,
        "tool": "grep",
        "sha256": content_digest("an older entry"),
        "content": '"an older entry"',
    }
    base_store.put((*thread_namespace(THREAD), "namespace"), digest, old, index=False)
    store = BaseStoreNamespaceStore(base_store, THREAD)
    entry = store.entry(reference)
    assert entry is not None and entry.content == "an older entry" and entry.tool_name == "grep"
    assert entry.args == {} and entry.content_summary == "" and entry.access_count == 0
    assert entry.created_at.startswith("20")  # the item's time
    assert store.read(reference) == "an older entry"
    assert store.entry(reference).access_count == 1  # type: ignore[union-attr]
