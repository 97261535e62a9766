"""The topic-index contract: a local Chroma directory, the in-memory index, a Chroma server.

The server variant needs a real ``chroma run`` server (the ``chroma_url`` fixture) and is
skipped, with the reason, when none can start. Server-only behaviour (URLs, distance spaces,
a server going away) is in ``test_topic_index_server``.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from indexed_topics import TOPICS, assert_same_hits, fill, ids, unique_collection

from langgraph_topics.stores import ChromaTopicIndex, InMemoryTopicIndex, TopicIndex, UseEmbedder
from langgraph_topics.stores.overlay import OverlayTopicIndex
from langgraph_topics.stores.topic_index import open_topic_index, stored_or_none, topic_document

REPO = Path(__file__).resolve().parents[1]


@dataclass
class IndexOpener:
    """Opens one index as ``TopicServices`` does: in a data directory, or on a server."""

    kind: str
    data_dir: Path
    url: str | None
    collection: str
    embedder: UseEmbedder

    def __call__(self) -> TopicIndex:
        """Open the index: each call a new handle on the same entries (but for ``memory``)."""
        if self.kind == "memory":
            return InMemoryTopicIndex(self.embedder)
        return open_topic_index(self.data_dir, self.url, self.embedder, self.collection)


@pytest.fixture(params=["local", "memory", "server"])
def make_index(
    request: pytest.FixtureRequest, embedder: UseEmbedder, tmp_path: Path
) -> IndexOpener:
    """Opens indexes of one kind, on a data directory (or collection) of this test's own."""
    # Looked up only for the server, so that the other kinds run without one.
    url = request.getfixturevalue("chroma_url") if request.param == "server" else None
    return IndexOpener(request.param, tmp_path, url, unique_collection(), embedder)


on_chroma = pytest.mark.parametrize("make_index", ["local", "server"], indirect=True)
"""For tests that open an index twice: the in-memory one keeps nothing between opens."""


def test_empty_index(make_index: IndexOpener) -> None:
    index = make_index()
    assert index.count() == 0
    assert index.search("anything", k=5) == []
    assert index.search("anything", k=5, exclude_status=()) == []
    index.remove("topic-missing")
    index.set_status("topic-missing", "archived")
    assert index.count() == 0


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("股市估值", "topic-stocks"),
        ("stock valuation", "topic-stocks"),
        ("how do I make spaghetti", "topic-pasta"),
        ("京都旅行", "topic-kyoto"),
        ("type hints in python code", "topic-python"),
    ],
)
def test_ranking(make_index: IndexOpener, query: str, best: str) -> None:
    index = make_index()
    fill(index)
    hits = index.search(query, k=10)  # k above the count is fine
    assert len(hits) == len(TOPICS)
    assert hits[0][0] == best
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= score <= 1.0 for score in scores)
    assert hits[0][1] > 0.3
    assert len(index.search(query, k=2)) == 2
    assert index.search(query, k=0) == []


def test_status_filtering(make_index: IndexOpener) -> None:
    index = make_index()
    fill(index, {"topic-stocks": "archived", "topic-kyoto": "dormant"})
    assert "topic-stocks" not in ids(index.search("股市估值", k=10))
    assert "topic-kyoto" in ids(index.search("股市估值", k=10))
    assert ids(index.search("股市估值", k=1, exclude_status=()))[0] == "topic-stocks"
    # The index tells archived topics from the rest only: a dormant one is kept as active.
    assert ids(index.search("股市估值", k=10, exclude_status=("active",))) == ["topic-stocks"]

    index.set_status("topic-stocks", "active")
    assert ids(index.search("股市估值", k=1)) == ["topic-stocks"]
    for topic_id in TOPICS:
        index.set_status(topic_id, "archived")
    assert index.search("股市估值", k=3) == []
    assert index.count() == len(TOPICS)


def test_moving_between_active_and_dormant_writes_nothing(
    make_index: IndexOpener, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = make_index()
    fill(index, {"topic-kyoto": "dormant"})
    writes: list[str] = []
    collection = getattr(index, "_collection", None)
    if collection is not None:  # the Chroma index: count its metadata updates
        update = collection.update

        def counted_update(**kw: Any) -> Any:
            writes.extend(kw["ids"])
            return update(**kw)

        monkeypatch.setattr(collection, "update", counted_update)
    for status in ("active", "dormant", "active", "dormant"):
        index.set_status("topic-kyoto", status)
    assert writes == []
    assert "topic-kyoto" in ids(index.search("Kyoto trip", k=10))
    index.set_status("topic-kyoto", "archived")
    assert "topic-kyoto" not in ids(index.search("Kyoto trip", k=10))
    index.set_status("topic-kyoto", "dormant")  # restored: searchable again
    assert "topic-kyoto" in ids(index.search("Kyoto trip", k=10))
    if collection is not None:
        assert writes == ["topic-kyoto", "topic-kyoto"]


@pytest.mark.parametrize("make_index", ["local"], indirect=True)
def test_a_registry_status_kept_alike_reads_nothing(
    make_index: IndexOpener, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Waking a dormant topic and putting an active one to sleep happen a few times a turn:
    # told the registry's previous status, the index does not ask Chroma what it holds.
    index = make_index()
    fill(index, {"topic-kyoto": "dormant", "topic-stocks": "archived"})
    collection = index._collection  # type: ignore[attr-defined]
    reads: list[str] = []
    get = collection.get

    def counted_get(**kw: Any) -> Any:
        reads.extend(kw.get("ids") or [])
        return get(**kw)

    monkeypatch.setattr(collection, "get", counted_get)
    index.set_status("topic-kyoto", "active", previous="dormant")
    index.set_status("topic-kyoto", "dormant", previous="active")
    assert reads == []
    assert "topic-kyoto" in ids(index.search("Kyoto trip", k=10))
    # Out of the archive, or with no previous status, the index is asked and written.
    index.set_status("topic-stocks", "dormant", previous="archived")
    assert reads == ["topic-stocks"]
    assert "topic-stocks" in ids(index.search("股市估值", k=10))
    index.set_status("topic-kyoto", "archived")
    assert reads == ["topic-stocks", "topic-kyoto"]
    assert "topic-kyoto" not in ids(index.search("Kyoto trip", k=10))


def test_upsert_replaces_and_remove(make_index: IndexOpener) -> None:
    index = make_index()
    fill(index)
    index.upsert("topic-pasta", "Japanese rail", "Shinkansen tickets and JR pass", status="active")
    assert index.count() == len(TOPICS)
    assert ids(index.search("JR pass for the bullet train", k=1)) == ["topic-pasta"]
    assert "topic-pasta" not in ids(index.search("carbonara recipe", k=1))
    index.remove("topic-pasta")
    assert index.count() == len(TOPICS) - 1
    assert "topic-pasta" not in ids(index.search("JR pass", k=10))


@on_chroma
def test_agrees_with_memory_index(make_index: IndexOpener, embedder: UseEmbedder) -> None:
    chroma = make_index()
    memory = InMemoryTopicIndex(embedder)
    fill(chroma)
    fill(memory)
    for query in ("股市估值", "pasta", "temples"):
        assert_same_hits(chroma.search(query, k=4), memory.search(query, k=4), 1e-4)


class ShortAnsweringCollection:
    """A Chroma collection whose vector search leaves out ``dropped`` (an unreachable node).

    With ``stored_vectors=False`` its ``get`` also returns no embeddings (a vector index
    behind the records), so the index has to embed the left-out topics' documents again.
    """

    def __init__(self, collection: Any, dropped: set[str], *, stored_vectors: bool) -> None:
        self._collection = collection
        self.dropped = dropped
        self.stored_vectors = stored_vectors

    def query(self, **kwargs: Any) -> Any:
        result = self._collection.query(**kwargs)
        kept = [i for i, topic_id in enumerate(result["ids"][0]) if topic_id not in self.dropped]
        return {
            **result,
            "ids": [[result["ids"][0][i] for i in kept]],
            "distances": [[result["distances"][0][i] for i in kept]],
        }

    def get(self, **kwargs: Any) -> Any:
        found = self._collection.get(**kwargs)
        return found if self.stored_vectors else {**found, "embeddings": None}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._collection, name)


@on_chroma
@pytest.mark.parametrize("stored_vectors", [True, False])
def test_a_topic_the_vector_search_leaves_out_is_still_found(
    make_index: IndexOpener,
    embedder: UseEmbedder,
    stored_vectors: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Asked for every topic, the index answers with every topic, in the exact order."""
    index = make_index()
    assert isinstance(index, ChromaTopicIndex)
    fill(index, {"topic-pasta": "archived"})
    memory = InMemoryTopicIndex(embedder)
    fill(memory, {"topic-pasta": "archived"})
    index._collection = ShortAnsweringCollection(  # type: ignore[assignment]
        index._collection, {"topic-stocks", "topic-pasta"}, stored_vectors=stored_vectors
    )
    with caplog.at_level(logging.WARNING, logger="langgraph_topics.stores.topic_index"):
        every = index.search("股市估值", k=10, exclude_status=())
    assert_same_hits(every, memory.search("股市估值", k=10, exclude_status=()), 1e-4)
    assert ids(every)[0] == "topic-stocks"
    assert "returned 2 of 4 matching topics" in caplog.text
    # The filter still holds for the topics scored exactly; k still bounds the answer.
    active = index.search("股市估值", k=10)
    assert_same_hits(active, memory.search("股市估值", k=10), 1e-4)
    assert "topic-pasta" not in ids(active)
    assert ids(index.search("stock valuation", k=3)) == ids(memory.search("stock valuation", k=3))


def test_fewer_hits_because_of_the_filter_are_no_fault(
    tmp_path: Path, embedder: UseEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    index = open_topic_index(tmp_path, None, embedder, unique_collection())
    fill(index, {"topic-pasta": "archived", "topic-kyoto": "archived"})
    with caplog.at_level(logging.WARNING, logger="langgraph_topics.stores.topic_index"):
        hits = index.search("anything", k=10)
    assert sorted(ids(hits)) == ["topic-python", "topic-stocks"]
    assert "matching topics" not in caplog.text


@on_chroma
def test_hostile_ids_names_and_briefs_round_trip(make_index: IndexOpener) -> None:
    hostile = {
        "a/b?c=d#e%20f &": ("名前 / ? #", "brief with\nnewlines\tand 'quotes' \"double\""),
        "../../etc/passwd": ("'; DROP TABLE collections; --", '{"$nin": ["archived"]}'),
        "id with spaces 🎉\u200b": ("\x00nul name", "emoji 🎉 and NUL \x00 in the brief"),
        "x" * 2000: ("long id", "Travel plans: temples in Kyoto, rail passes, hotels."),
    }
    index = make_index()
    for topic_id, (name, brief) in hostile.items():
        index.upsert(topic_id, name, brief, status="active")
    assert index.count() == len(hostile)
    found = ids(index.search("temples in Kyoto", k=10))
    assert sorted(found) == sorted(hostile)
    assert found[0] == "x" * 2000
    index.set_status("a/b?c=d#e%20f &", "archived")
    assert "a/b?c=d#e%20f &" not in ids(index.search("anything", k=10))
    index.remove("../../etc/passwd")
    assert index.count() == len(hostile) - 1
    # Reopened (as another worker would), the same ids come back byte for byte.
    assert sorted(ids(make_index().search("x", k=10, exclude_status=()))) == sorted(
        set(hostile) - {"../../etc/passwd"}
    )


@on_chroma
def test_two_handles_in_one_process_see_each_others_writes(make_index: IndexOpener) -> None:
    first, second = make_index(), make_index()
    fill(first, {"topic-kyoto": "archived"})
    assert second.count() == len(TOPICS)
    assert ids(second.search("股市估值", k=1)) == ["topic-stocks"]
    assert "topic-kyoto" not in ids(second.search("Kyoto", k=10))

    second.set_status("topic-kyoto", "active")
    second.remove("topic-pasta")
    second.upsert("topic-bonds", "Bonds", "债券收益率和利率", status="active")
    assert first.count() == len(TOPICS)
    assert ids(first.search("Kyoto temples", k=1)) == ["topic-kyoto"]
    assert "topic-pasta" not in ids(first.search("carbonara", k=10))
    assert ids(first.search("债券收益率", k=1)) == ["topic-bonds"]


@on_chroma
def test_another_process_sees_and_writes_the_same_index(
    make_index: IndexOpener, tmp_path: Path
) -> None:
    index = make_index()
    fill(index, {"topic-kyoto": "archived"})
    expected = index.search("股市估值", k=10)
    assert "topic-kyoto" not in ids(expected)

    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from langgraph_topics.stores import UseEmbedder\n"
        "from langgraph_topics.stores.topic_index import open_topic_index\n"
        "url = sys.argv[2] or None\n"
        "index = open_topic_index(Path(sys.argv[1]), url, UseEmbedder(), sys.argv[3])\n"
        "hits = index.search('股市估值', k=10)\n"
        "index.upsert('topic-new', 'Bonds', '债券收益率', status='active')\n"
        "print(json.dumps({'count': index.count(), 'hits': hits}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    arguments = [str(make_index.data_dir), make_index.url or "", make_index.collection]
    completed = subprocess.run(
        [sys.executable, "-c", script, *arguments],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["count"] == len(TOPICS) + 1
    assert_same_hits(result["hits"], expected, 1e-5)

    if make_index.url is None:
        # This process's copy of a local collection is stale once another process wrote it.
        ChromaTopicIndex.reload_from_disk_next_time()
        index = make_index()
    else:
        # No reload: the server holds the only copy, and nothing is kept on this machine.
        assert not (make_index.data_dir / "index").exists()
    assert index.count() == len(TOPICS) + 1
    assert ids(index.search("债券收益率", k=1)) == ["topic-new"]


def test_the_indexed_vector_of_a_brief_is_handed_back_for_its_exact_text(
    make_index: IndexOpener, embedder: UseEmbedder
) -> None:
    index = make_index()
    index.upsert("t1", "Kyoto", "Temples, ryokan and the train to Nara.", status="active")
    document = topic_document("Kyoto", "Temples, ryokan and the train to Nara.")
    vector = index.document_vector("t1", document)
    assert vector is not None and vector.dtype == np.float32
    assert np.allclose(vector, embedder.embed_array([document])[0], atol=1e-6)
    assert index.document_vector("t1", document + " (rewritten)") is None  # another brief
    assert index.document_vector("unknown", document) is None
    overlay = OverlayTopicIndex(index, InMemoryTopicIndex(embedder))
    overlay.upsert("t1", "Kyoto", "Only in the dry run.", status="active")
    assert overlay.document_vector("t1", document) is None  # the view's brief hides the base's
    assert (
        overlay.document_vector("t1", topic_document("Kyoto", "Only in the dry run.")) is not None
    )
    assert overlay.embedder is getattr(index, "embedder", None)


def test_an_unreadable_index_costs_an_embedding_not_the_turn() -> None:
    class Unreadable:
        def document_vector(self, topic_id: str, document: str) -> None:
            raise RuntimeError("database disk image is malformed")

    assert stored_or_none(cast(TopicIndex, Unreadable()))("t1", "Kyoto\nTemples") is None


def test_a_local_index_on_a_nearly_full_disk_is_not_written(
    embedder: UseEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chroma's core may wait forever inside a write on a full disk: it is not asked to write."""
    from langgraph_topics.errors import StoreError
    from langgraph_topics.stores import topic_index

    index = open_topic_index(tmp_path, None, embedder, unique_collection())
    index.upsert("topic-kyoto", "Kyoto", "temples and ryokan", status="active")
    monkeypatch.setattr(topic_index, "nearly_full", lambda directory: True)
    for write in (
        lambda: index.upsert("topic-bread", "Bread", "sourdough starter", status="active"),
        lambda: index.set_status("topic-kyoto", "archived"),
        lambda: index.remove("topic-kyoto"),
    ):
        with pytest.raises(StoreError, match="disk full"):
            write()
    # Nothing was written (Kyoto is neither archived nor removed, Bread not added); reads go on.
    assert index.count() == 1
    assert [topic for topic, _ in index.search("temples", k=3)] == ["topic-kyoto"]
