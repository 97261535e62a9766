"""``langgraph-topics topics --map FILE``: topic tree and to-scale timeline, PNG or Mermaid."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from conversations import subject_records

from langgraph_topics.cli.main import main
from langgraph_topics.stores.topic_store import JsonlTopicStore
from langgraph_topics.viz import (
    topic_map_figure,
    topic_map_markdown,
    topic_map_mermaid,
    topic_map_rows,
    topic_timeline_mermaid,
)

FLAT = [
    {"id": i, "name": name, "status": status, "message_count": count, "parent_id": None}
    for i, name, status, count in (
        ("a", "Kyoto trip", "active", 6),
        ("b", "ryokan [Gion]", "dormant", 2),
        ("c", "股票基本面", "archived", 4),
        ("d", "sourdough", "active", 3),
        ("e", "odd", "unregistered", 1),
    )
]
FLAT_DAYS = {
    "2024-01-01": ["d"],
    "2024-01-02": ["a", "c"],
    "2024-01-03": ["a"],
    "2024-03-01": ["b", "d"],
}


@pytest.fixture
def nested(tmp_path: Path) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """A real topic store with subtopics: Kyoto trip → ryokan → kaiseki dinner, and sourdough."""
    store = JsonlTopicStore(tmp_path / "thread")
    trip = store.create_topic("Kyoto trip", "brief")
    ryokan = store.create_topic("ryokan near Gion", "brief", parent_id=trip["id"])
    dinner = store.create_topic("kaiseki dinner", "brief", parent_id=ryokan["id"])
    bread = store.create_topic("sourdough", "brief")
    number = 0
    for topic, days in (
        (trip, ["2024-03-01", "2024-03-02", "2024-06-01"]),
        (ryokan, ["2024-03-02", "2024-03-20"]),
        (dinner, ["2024-03-21"]),
        (bread, ["2024-01-05"]),
    ):
        for day in days:
            number += 1
            message = {"id": f"m{number}", "role": "user", "content": "x", "timestamp": day}
            store.append(topic["id"], [message])
    status = {trip["id"]: "active", ryokan["id"]: "dormant"}
    topics = [
        {**store.meta(topic_id), "status": status.get(topic_id, "active")}
        for topic_id in store.topic_ids()
    ]
    return topics, store.time_index()


def test_flat_topics_are_grouped_by_status_in_order_first_talked_about() -> None:
    rows = topic_map_rows(FLAT, FLAT_DAYS)
    shown = [(row.depth, row.kind, row.label) for row in rows]
    assert shown == [
        (0, "thread", "5 topics, 16 messages"),
        (1, "group", "active · 2 topics"),
        (2, "topic", "sourdough"),  # first talked about on 1 January
        (2, "topic", "Kyoto trip"),
        (1, "group", "dormant · 1 topic"),
        (2, "topic", "ryokan [Gion]"),
        (1, "group", "archived · 1 topic"),
        (2, "topic", "股票基本面"),
        (1, "group", "unregistered · 1 topic"),
        (2, "topic", "odd"),  # never talked about: no days, still listed
    ]
    assert [rows[r.parent_row].kind for r in rows[1:] if r.parent_row is not None] == [
        "thread", "group", "group", "thread", "group", "thread", "group", "thread", "group",
    ]  # fmt: skip
    assert rows[3].days == (date(2024, 1, 2), date(2024, 1, 3))


def test_subtopics_hang_from_their_parent(
    nested: tuple[list[dict[str, Any]], dict[str, list[str]]],
) -> None:
    topics, time_index = nested
    rows = topic_map_rows(topics, time_index)
    shown = [(row.depth, row.label, row.status) for row in rows if row.kind == "topic"]
    assert shown == [
        (2, "sourdough", "active"),
        (2, "Kyoto trip", "active"),
        (3, "ryokan near Gion", "dormant"),  # under its parent, whatever its own status
        (4, "kaiseki dinner", "active"),
    ]
    by_label = {row.label: number for number, row in enumerate(rows)}
    assert rows[by_label["ryokan near Gion"]].parent_row == by_label["Kyoto trip"]
    assert rows[by_label["kaiseki dinner"]].parent_row == by_label["ryokan near Gion"]
    assert rows[by_label["ryokan near Gion"]].is_subtopic
    assert not rows[by_label["Kyoto trip"]].is_subtopic

    ids = {t["name"]: "t_" + t["id"].replace("-", "_") for t in topics}
    tree = topic_map_mermaid(topics, time_index, title="thread alice")
    assert tree.startswith("flowchart LR\n")
    assert f"{ids['Kyoto trip']} ==> {ids['ryokan near Gion']}" in tree
    assert f"{ids['ryokan near Gion']} ==> {ids['kaiseki dinner']}" in tree
    assert f"g_active --> {ids['Kyoto trip']}" in tree
    assert "dormant, 2 messages<br/>2024-03-02 to 2024-03-20, on 2 days" in tree
    assert "active, 1 message<br/>2024-03-21" in tree
    assert f'{ids["ryokan near Gion"]}["ryokan near Gion' in tree
    assert '"]:::dormant' in tree

    timeline = topic_timeline_mermaid(topics, time_index)
    assert timeline.startswith("gantt\n") and "  dateFormat YYYY-MM-DD" in timeline
    assert "  section ↳ ↳ kaiseki dinner (active, 1 message)" in timeline
    # consecutive days are one bar; task names never start with a digit
    assert "    from 2024-03-01 to 2024-03-02 :active, " in timeline
    assert ", 2024-03-01, 2d" in timeline and ", 2024-06-01, 1d" in timeline
    assert "    on 2024-03-20 :done, " in timeline


def test_parent_cycle_does_not_hide_topics() -> None:
    looped = [
        {"id": "x", "name": "x", "status": "active", "message_count": 1, "parent_id": "y"},
        {"id": "y", "name": "y", "status": "active", "message_count": 1, "parent_id": "x"},
        {"id": "z", "name": "z", "status": "active", "message_count": 1, "parent_id": "x"},
    ]
    rows = topic_map_rows(looped, {})
    assert sorted(r.label for r in rows if r.kind == "topic") == ["x", "y", "z"]
    z = next(r for r in rows if r.label == "z")
    assert z.is_subtopic and rows[z.parent_row or 0].label == "x"


def test_mermaid_labels_are_sanitised() -> None:
    nasty = [
        {
            "id": "t-1",
            "name": 'a "quoted" [name] {x} <b>|#;:\nnext',
            "status": "active",
            "message_count": 1,
            "parent_id": None,
        }
    ]
    tree = topic_map_mermaid(nasty, {"2024-01-01": ["t-1"]})
    label = next(line for line in tree.splitlines() if line.startswith("  t_t_1["))
    inner = label.split('["', 1)[1].rsplit('"]', 1)[0]
    assert not set(inner.replace("<br/>", "")) & set('"[]{}<>|#;:\n')
    assert "a quoted name x b next" in inner
    timeline = topic_timeline_mermaid(nasty, {"2024-01-01": ["t-1"]})
    assert "  section a quoted name x b next (active, 1 message)" in timeline
    page = topic_map_markdown(nasty, {"2024-01-01": ["t-1"]}, title="thread t")
    assert page.count("```mermaid\n") == 2 and page.startswith("# Topic map: thread t")


@pytest.mark.filterwarnings("ignore:Glyph .* missing from font")
def test_png_timeline_is_to_scale_with_dates_and_legend_outside() -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.dates import num2date

    figure = topic_map_figure(FLAT, FLAT_DAYS, title="thread t")
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    tree, timeline = figure.axes

    # The tree: one elbow per row that hangs from another (9), labels with message counts.
    assert len(tree.get_lines()) >= 9
    texts = [t.get_text() for t in tree.texts]
    assert "Kyoto trip (6)" in texts and "active · 2 topics" in texts

    # Day marks sit on a date axis, their distances proportional to the days between them.
    marks = [line for line in timeline.get_lines() if line.get_marker() == "|"]
    days = sorted({num2date(x).date() for line in marks for x in line.get_xdata(orig=False)})
    assert days == [date(2024, 1, 1), date(2024, 1, 2), date(2024, 1, 3), date(2024, 3, 1)]
    xs = sorted({float(x) for line in marks for x in line.get_xdata(orig=False)})
    assert xs[1] - xs[0] == pytest.approx(1.0) and xs[3] - xs[2] == pytest.approx(58.0)
    low, high = timeline.get_xlim()
    assert num2date(low).date() <= date(2024, 1, 1) and num2date(high).date() >= date(2024, 3, 2)
    labels = [t.get_text() for t in timeline.get_xticklabels() if t.get_text()]
    assert len(labels) >= 3, labels
    assert all(
        date(2023, 12, 1) <= date.fromisoformat(label) <= date(2024, 3, 31) for label in labels
    )

    # The legend is outside both panels.
    legend = figure.legends[0].get_window_extent()
    for axes in (tree, timeline):
        assert not legend.overlaps(axes.get_window_extent())
    entries = [t.get_text() for t in figure.legends[0].get_texts()]
    assert {"active", "dormant", "archived", "other", "parent → subtopic"} <= set(entries)


def test_cli_writes_png_mermaid_and_markdown(tmp_path: Path) -> None:
    conversation = tmp_path / "c.jsonl"
    # At budget 300 the last 20 messages alone pass the trigger: a split waits for 10 more.
    records = subject_records(["stocks", "kyoto", "sourdough", "fitness"])
    conversation.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records))
    common = ["--thread", "t", "--data-dir", str(tmp_path / "d")]
    assert main(["import", str(conversation), *common, "--budget", "300"]) == 0
    png, mermaid, page = tmp_path / "out" / "map.png", tmp_path / "map.mmd", tmp_path / "map.md"
    for target in (png, mermaid, page):
        assert main(["topics", *common, "--map", str(target)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    tree = mermaid.read_text("utf-8")
    assert tree.startswith("flowchart LR\n") and "thread t<br/>" in tree and "g_active" in tree
    timeline = (tmp_path / "map.timeline.mmd").read_text("utf-8")
    assert timeline.startswith("gantt\n") and "title thread t" in timeline
    assert "2024-01-1" in timeline
    text = page.read_text("utf-8")
    assert tree in text and timeline in text
