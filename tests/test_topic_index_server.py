"""The topic index's server side (issue 14): URLs, one client per server, a server going away.

The contract every index keeps, on a server too, is in ``test_topic_index``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from chroma_server import start_chroma
from indexed_topics import TOPICS, assert_same_hits, fill, ids, unique_collection

from langgraph_topics.bench.dev_server import free_port
from langgraph_topics.errors import InputError
from langgraph_topics.stores import ChromaTopicIndex, InMemoryTopicIndex, UseEmbedder
from langgraph_topics.stores.topic_index import (
    open_topic_index,
    parse_chroma_url,
    server_client,
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
        assert_same_hits(index.search("股市估值", k=4), expected, 1e-4)


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
    url = f"http://127.0.0.1:{free_port()}"
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
