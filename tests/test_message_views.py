"""Topics handed out without a copy: views that stay snapshots while the store appends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores import JsonlTopicStore
from langgraph_topics.stores.jsonl_lines import decode_lines, decode_whole
from langgraph_topics.stores.message_views import MessagesView
from langgraph_topics.stores.overlay import OverlayTopicStore
from langgraph_topics.stores.topic_store import _read_records


def _said(n: int, content: str | None = None) -> StoredMessage:
    return {"id": f"m{n}", "role": "user", "content": content or f"message {n}"}


def test_a_view_is_a_snapshot_of_a_list_that_grows() -> None:
    source = [_said(n) for n in range(5)]
    view = MessagesView(source)
    source.append(_said(5))
    assert len(view) == 5 and list(view) == source[:5]
    assert view[-1] is source[4] and view[1:3] == source[1:3] and view[::-2] == source[4::-2]
    with pytest.raises(IndexError):
        view[5]
    grown = MessagesView(source)
    assert grown.extends(view) and not view.extends(grown)
    assert not MessagesView(list(source)).extends(view)  # another list: another topic


def test_the_store_view_equals_its_messages_and_ignores_later_appends(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("t", "")["id"]
    store.append(topic, [_said(n) for n in range(3)])
    view = store.messages_view(topic)
    store.append(topic, [_said(3)])
    assert list(view) == store.messages(topic)[:3]
    assert list(store.messages_view(topic)) == store.messages(topic)
    with pytest.raises(KeyError):
        store.messages_view("topic-unknown")


def test_a_dry_run_view_adds_its_own_appends(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("t", "")["id"]
    store.append(topic, [_said(n) for n in range(3)])
    overlay = OverlayTopicStore(store)
    assert list(overlay.messages_view(topic)) == store.messages(topic)
    overlay.append(topic, [_said(9)])
    assert list(overlay.messages_view(topic)) == overlay.messages(topic)
    assert len(store.messages(topic)) == 3


def test_files_decode_the_same_whichever_parser_reads_them() -> None:
    # orjson refuses a lone surrogate escape and NaN; the line-by-line parse reads them.
    lines = [
        json.dumps({"id": "a", "content": "\ud800"}).encode(),
        b'{"id": "b", "score": NaN}',
        json.dumps({"id": "c", "content": "caf\u00e9 \u6587"}, ensure_ascii=False).encode(),
        b"",
        b'{"torn": ',
    ]
    decoded = decode_lines(lines)
    assert [number for number, _ in decoded] == [1, 2, 3, 5]
    assert decoded[0][1] == {"id": "a", "content": "\ud800"}
    assert decoded[1][1] is not None and decoded[1][1]["score"] != decoded[1][1]["score"]
    assert decoded[2][1] == {"id": "c", "content": "caf\u00e9 \u6587"}
    assert decoded[3][1] is None
    well_formed = [json.dumps({"id": str(n), "n": n}).encode() for n in range(3)]
    assert decode_lines(well_formed) == [(n + 1, {"id": str(n), "n": n}) for n in range(3)]
    whole = decode_whole(b"\n".join(well_formed) + b"\n")
    assert whole == [record for _, record in decode_lines(well_formed)]


@pytest.mark.parametrize(
    "raw",
    [
        b'{"id": "a"}\n{"id": "b"}',  # torn: no newline at the end
        b'{"id": "a"}\n\n{"id": "b"}\n',  # a blank line
        b'{"id": "a"}, {"id": "b"}\n',  # one line edited into two objects
        b'{"id": "a"}\n[1]\n',  # a line that is not an object
    ],
)
def test_a_file_read_whole_only_when_every_line_is_one_object(tmp_path: Path, raw: bytes) -> None:
    assert decode_whole(raw) is None
    path = tmp_path / "t.jsonl"
    path.write_bytes(raw)
    # The line-by-line parse decides what such a file holds, with its line numbers.
    assert list(_read_records(path, repair=False)) == [
        record for _, record in decode_lines(raw.split(b"\n")) if record is not None
    ]
