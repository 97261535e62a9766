"""The topic-index contract on a local Chroma directory and on a Chroma server (issue 14)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from chroma_server import start_chroma

from langgraph_topics.errors import InputError
from langgraph_topics.stores import ChromaTopicIndex, InMemoryTopicIndex, TopicIndex, UseEmbedder
from langgraph_topics.stores.topic_index import (
    open_topic_index,
    parse_chroma_url,
    server_client,
)

REPO = Path(__file__).resolve().parents[1]

TOPICS = {
    "topic-stocks": (
        "股票基本面",
        "讨论股票的基本面分析：市盈率、市净率、财报、估值方法和行业比较。",
    ),
    "topic-pasta": ("Cooking pasta", "Recipes for carbonara and tomato sauce, cooking times."),
    "topic-kyoto": ("Trip to Kyoto", "Travel plans: temples in Kyoto, rail passes, hotels."),
    "topic-python": ("Python typing", "Python programming: asyncio, type hints and mypy."),
}

IndexFactory = Callable[[], TopicIndex]


def unique_collection() -> str:
    return f"test-{uuid.uuid4().hex}"


@pytest.fixture(params=["local", "server"])
def make_index(
    request: pytest.FixtureRequest, embedder: UseEmbedder, tmp_path: Path
) -> IndexFactory:
    """Open indexes as ``TopicServices`` does: one data directory, or one server, per test."""
    # Looked up only for the server variant, so that the local one runs without a server.
    url = request.getfixturevalue("chroma_url") if request.param == "server" else None
    collection = unique_collection()

    def factory() -> TopicIndex:
        return open_topic_index(tmp_path, url, embedder, collection)

    return factory


def fill(index: TopicIndex, statuses: dict[str, str] | None = None) -> None:
    for topic_id, (name, brief) in TOPICS.items():
        index.upsert(topic_id, name, brief, status=(statuses or {}).get(topic_id, "active"))


def ids(hits: Sequence[tuple[str, float]]) -> list[str]:
    return [topic_id for topic_id, _ in hits]


def test_empty_index(make_index: IndexFactory) -> None:
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
        ("how do I make spaghetti", "topic-pasta"),
        ("京都旅行", "topic-kyoto"),
        ("type hints in python code", "topic-python"),
    ],
)
def test_ranking(make_index: IndexFactory, query: str, best: str) -> None:
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


def test_status_filtering(make_index: IndexFactory) -> None:
    index = make_index()
    fill(index, {"topic-stocks": "archived", "topic-kyoto": "dormant"})
    assert "topic-stocks" not in ids(index.search("股市估值", k=10))
    assert "topic-kyoto" in ids(index.search("股市估值", k=10))
    assert ids(index.search("股市估值", k=1, exclude_status=()))[0] == "topic-stocks"
    found = ids(index.search("trip", k=10, exclude_status=("archived", "dormant")))
    assert set(found) == {"topic-pasta", "topic-python"}

    index.set_status("topic-stocks", "active")
    assert ids(index.search("股市估值", k=1)) == ["topic-stocks"]
    for topic_id in TOPICS:
        index.set_status(topic_id, "archived")
    assert index.search("股市估值", k=3) == []
    assert index.count() == len(TOPICS)


def test_upsert_replaces_and_remove(make_index: IndexFactory) -> None:
    index = make_index()
    fill(index)
    index.upsert("topic-pasta", "Japanese rail", "Shinkansen tickets and JR pass", status="active")
    assert index.count() == len(TOPICS)
    assert ids(index.search("JR pass for the bullet train", k=1)) == ["topic-pasta"]
    assert "topic-pasta" not in ids(index.search("carbonara recipe", k=1))
    index.remove("topic-pasta")
    assert index.count() == len(TOPICS) - 1
    assert "topic-pasta" not in ids(index.search("JR pass", k=10))


def test_agrees_with_memory_index(make_index: IndexFactory, embedder: UseEmbedder) -> None:
    chroma = make_index()
    memory = InMemoryTopicIndex(embedder)
    fill(chroma)
    fill(memory)
    for query in ("股市估值", "pasta", "temples"):
        chroma_hits = chroma.search(query, k=4)
        memory_hits = memory.search(query, k=4)
        assert ids(chroma_hits) == ids(memory_hits)
        for (_, a), (_, b) in zip(chroma_hits, memory_hits, strict=True):
            assert a == pytest.approx(b, abs=1e-4)


def test_hostile_ids_names_and_briefs_round_trip(
    make_index: IndexFactory, embedder: UseEmbedder
) -> None:
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


def test_blank_url_keeps_the_local_index(embedder: UseEmbedder, tmp_path: Path) -> None:
    index = open_topic_index(tmp_path, "  ", embedder, "t-thread")
    assert isinstance(index, ChromaTopicIndex)
    assert index.path == tmp_path / "index"
    assert index.server_url is None
    index.upsert("topic-a", "A", "alpha", status="active")
    # The same directory and collection as ``ChromaTopicIndex(data_dir / "index", ...)``.
    assert ChromaTopicIndex(tmp_path / "index", embedder, collection="t-thread").count() == 1


def test_needs_exactly_one_location(embedder: UseEmbedder, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="either a path or a server_url"):
        ChromaTopicIndex(None, embedder)
    with pytest.raises(InputError, match="either a path or a server_url"):
        ChromaTopicIndex(tmp_path, embedder, server_url="http://127.0.0.1:8000")


# --- on the server only ---------------------------------------------------------------------


def test_two_workers_see_each_others_writes(chroma_url: str, embedder: UseEmbedder) -> None:
    collection = unique_collection()
    first = ChromaTopicIndex(None, embedder, collection, server_url=chroma_url)
    second = ChromaTopicIndex(None, embedder, collection, server_url=chroma_url)
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


def test_another_process_sees_and_writes_the_same_index(
    chroma_url: str, embedder: UseEmbedder, tmp_path: Path
) -> None:
    collection = unique_collection()
    index = open_topic_index(tmp_path, chroma_url, embedder, collection)
    fill(index, {"topic-kyoto": "archived"})
    expected = index.search("股市估值", k=10)

    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from langgraph_topics.stores import UseEmbedder\n"
        "from langgraph_topics.stores.topic_index import open_topic_index\n"
        "index = open_topic_index(Path(sys.argv[1]), sys.argv[2], UseEmbedder(), sys.argv[3])\n"
        "hits = index.search('股市估值', k=10)\n"
        "index.upsert('topic-new', 'Bonds', '债券收益率', status='active')\n"
        "print(json.dumps({'count': index.count(), 'hits': hits}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    completed = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "other"), chroma_url, collection],
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
    assert ids(result["hits"]) == ids(expected)
    for (_, a), (_, b) in zip(result["hits"], expected, strict=True):
        assert a == pytest.approx(b, abs=1e-5)
    # No reload needed: the server holds the only copy.
    assert index.count() == len(TOPICS) + 1
    assert ids(index.search("债券收益率", k=1)) == ["topic-new"]
    assert not (tmp_path / "index").exists() and not (tmp_path / "other" / "index").exists()


def test_other_distance_spaces_give_cosine_similarities(
    chroma_url: str, embedder: UseEmbedder
) -> None:
    memory = InMemoryTopicIndex(embedder)
    fill(memory)
    expected = memory.search("股市估值", k=4)
    for space in ("l2", "ip"):
        collection = unique_collection()
        # Made by someone else with another space: the index must follow it, not assume cosine.
        server_client(chroma_url).create_collection(
            collection, embedding_function=None, configuration={"hnsw": {"space": space}}
        )
        index = ChromaTopicIndex(None, embedder, collection, server_url=chroma_url)
        fill(index)
        hits = index.search("股市估值", k=4)
        assert ids(hits) == ids(expected)
        for (_, a), (_, b) in zip(hits, expected, strict=True):
            assert a == pytest.approx(b, abs=1e-4)


def test_reload_from_disk_leaves_server_indexes_working(
    chroma_url: str, embedder: UseEmbedder
) -> None:
    collection = unique_collection()
    index = ChromaTopicIndex(None, embedder, collection, server_url=chroma_url)
    fill(index)
    ChromaTopicIndex.reload_from_disk_next_time()
    assert ids(index.search("股市估值", k=1)) == ["topic-stocks"]
    reopened = ChromaTopicIndex(None, embedder, collection, server_url=chroma_url)
    assert reopened.count() == len(TOPICS)


def test_one_client_per_server_and_process(chroma_url: str) -> None:
    assert server_client(chroma_url) is server_client(chroma_url + "/")
    assert server_client(chroma_url) is server_client(f" {chroma_url.upper()}/ ")


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("127.0.0.1:8000", "scheme must be http or https"),
        ("ftp://127.0.0.1:8000", "scheme must be http or https, not 'ftp'"),
        ("http://", "no host"),
        ("http://127.0.0.1:99999", "Port out of range"),
        ("http://127.0.0.1:port", "Port could not be cast"),
        ("http://user:secret@127.0.0.1:8000", "credentials"),
        ("http://127.0.0.1:8000/api/v2", "a path, query or fragment"),
        ("http://127.0.0.1:8000?tenant=x", "a path, query or fragment"),
    ],
)
def test_malformed_url_is_one_line_input_error(
    embedder: UseEmbedder, tmp_path: Path, url: str, problem: str
) -> None:
    with pytest.raises(InputError) as caught:
        open_topic_index(tmp_path, url, embedder, "t-thread")
    message = str(caught.value)
    assert "\n" not in message
    assert repr(url) in message
    assert problem in message
    assert not (tmp_path / "index").exists()


def test_url_defaults() -> None:
    assert parse_chroma_url(" http://chroma.internal ").url == "http://chroma.internal:80"
    assert parse_chroma_url("https://chroma.internal/").url == "https://chroma.internal:443"
    assert parse_chroma_url("http://[::1]:8000").url == "http://[::1]:8000"


def test_unreachable_server_is_one_line_input_error(embedder: UseEmbedder, tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with pytest.raises(InputError) as caught:
        open_topic_index(tmp_path, url, embedder, "t-thread")
    message = str(caught.value)
    assert "\n" not in message
    assert repr(url) in message and "no Chroma server answers" in message


def test_server_gone_mid_run_is_one_line_connection_error(embedder: UseEmbedder) -> None:
    try:
        server = start_chroma()
    except Exception as error:  # noqa: BLE001 - the reason is the skip message
        pytest.skip(f"Chroma server unavailable: {error}")
    try:
        index = ChromaTopicIndex(None, embedder, unique_collection(), server_url=server.url)
        fill(index)
    finally:
        server.stop()
    with pytest.raises(ConnectionError) as caught:
        index.search("股市估值", k=3)
    message = str(caught.value)
    assert "\n" not in message
    assert server.url in message and "3 attempts" in message
