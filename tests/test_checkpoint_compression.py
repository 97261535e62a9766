"""Checkpoints are stored compressed, and a database written before still opens and goes on."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.graph.builder import build_graph
from langgraph_topics.roles.native import native_roles
from langgraph_topics.stores.checkpoint_compression import ZstdCodec, compressed_serializer
from langgraph_topics.stores.checkpointer import open_sqlite_checkpointer


def _memory(data_dir: Path) -> TopicMemory:
    embedder = HashEmbedder()
    settings = Settings(data_dir=data_dir, budget_tokens=600)
    return TopicMemory(settings=settings, roles=native_roles(embedder, settings), embedder=embedder)


def _rows(database: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(database) as connection:
        return [
            (str(kind), int(size))
            for kind, size in connection.execute(
                "SELECT type, LENGTH(checkpoint) FROM checkpoints ORDER BY checkpoint_id"
            )
        ]


def test_checkpoints_are_stored_compressed_and_read_back_whole(tmp_path: Path) -> None:
    with _memory(tmp_path) as memory:
        for n in range(3):
            memory.chat("t", f"question {n} about the sourdough starter and its feeding")
        state = memory.state("t")
        report = memory.check("t")
        assert report.ok, report.findings
    rows = _rows(tmp_path / "checkpoints.sqlite")
    assert rows and {kind for kind, _ in rows} == {"msgpack+zstd"}
    with _memory(tmp_path) as memory:
        assert memory.state("t") == state  # reopened: the same state, message for message
        memory.chat("t", "one more question")
        assert memory.state("t")["turn"] == state["turn"] + 1
    plain = SqliteSaver(sqlite3.connect(tmp_path / "checkpoints.sqlite"))
    newest = plain.conn.execute("SELECT type, checkpoint FROM checkpoints").fetchall()[-1]
    compressed = EncryptedSerializer(ZstdCodec()).loads_typed((newest[0], newest[1]))
    raw_size = len(plain.serde.dumps_typed(compressed)[1])
    assert len(newest[1]) < raw_size / 3  # the state is repetitive: zstd takes most of it
    plain.conn.close()


def test_a_database_of_plain_checkpoints_opens_and_goes_on(tmp_path: Path) -> None:
    database = tmp_path / "checkpoints.sqlite"
    connection = sqlite3.connect(database, check_same_thread=False)
    saver = SqliteSaver(connection)  # LangGraph's own serializer: what an older release wrote
    config = {"configurable": {"thread_id": "t"}}
    graph = build_graph(saver)
    graph.update_state(config, {"turn": 7, "total_messages": 0}, as_node="bookkeeping")
    connection.close()
    assert {kind for kind, _ in _rows(database)} == {"msgpack"}
    with _memory(tmp_path) as memory:
        assert memory.state("t")["turn"] == 7
        memory.chat("t", "hello after the upgrade")
        assert memory.state("t")["turn"] == 8
        report = memory.check("t")
        assert report.ok, report.findings
    kinds = [kind for kind, _ in _rows(database)]
    assert kinds[0] == "msgpack" and kinds[-1] == "msgpack+zstd"


def test_the_schema_allowlist_still_reaches_the_inner_serializer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    saver = open_sqlite_checkpointer(tmp_path / "checkpoints.sqlite")
    with caplog.at_level(logging.WARNING):
        clone = saver.with_allowlist([("langgraph_topics.state.records", "TopicRecord")])
    assert isinstance(clone.serde, EncryptedSerializer)
    assert not [r for r in caplog.records if "allowlist" in r.getMessage()]
    saver.conn.close()


def test_bytes_of_another_codec_fail_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="encoded with 'aes'"):
        ZstdCodec().decrypt("aes", b"\x00")


@pytest.mark.parametrize("value", [None, b"", "", 0, {"a": [1, 2]}, b"\x00" * 10])
def test_every_kind_of_value_comes_back_as_it_went_in(value: object) -> None:
    serializer = compressed_serializer()
    kind, data = serializer.dumps_typed(value)
    assert kind.endswith("+zstd")
    assert serializer.loads_typed((kind, data)) == value
