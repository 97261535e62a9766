"""Draw a thread's topic hierarchy and timeline: a PNG (matplotlib) or Mermaid text.

Input is what :meth:`TopicMemory.topics` lists and the topic store's ``time_index()`` (topics
per day). The hierarchy is a tree: the thread, then its topics grouped by status (active,
dormant, archived…), each topic followed by its subtopics (``parent_id``). Until a topic has
subtopics the tree is that grouped list. Within a group, topics come in the order they were
first talked about.

- **PNG**: the tree on the left; on the right, on a real date axis (gaps between days to scale),
  a mark for every day each topic was talked about and a bar from its first to its last day.
  The legend sits under both panels. matplotlib is imported only when a PNG is drawn, and the
  figure is drawn without pyplot, so drawing changes no global matplotlib state (a notebook's
  back end stays as it was) and works on machines without a display.
- **Mermaid**: a ``flowchart`` of the tree (each topic with its status, message count and the
  days it spans; its links to other topics as dashed edges named by their kind, a merged
  topic as a dashed node of its own) and a ``gantt`` chart of the days each topic was talked
  about (to scale, consecutive days merged); the PNG leaves links out. A ``.mmd`` file holds
  one diagram, so ``map.mmd`` gets the tree and ``map.timeline.mmd`` the timeline; a ``.md``
  file gets both as fenced ``mermaid`` blocks (GitHub renders them).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any, Literal

STATUS_COLOURS = {
    "active": "#2e7d32",
    "dormant": "#9e9e9e",
    "archived": "#6d4c41",
    "split": "#1565c0",
}
"""Colour per topic status; anything else (e.g. ``unregistered``) is drawn in orange."""
_OTHER_COLOUR = "#ef6c00"
_SUBTOPIC_COLOUR = "#1565c0"
"""Colour of a parent → subtopic connector (the grouping connectors are light grey)."""
_CJK_FONTS = (
    "Noto Sans CJK SC",
    "Noto Sans SC",
    "Source Han Sans SC",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Microsoft YaHei",
    "SimHei",
    "PingFang SC",
    "Arial Unicode MS",
)
"""Fonts tried (when installed) so that Chinese topic names are drawn rather than boxes."""
CJK_FONTS = _CJK_FONTS
"""The same, for the other pictures (``theme_timeline``)."""


TopicMapInput = Mapping[str, Any]
"""A topic with ``id``, ``name``, ``status``, ``message_count`` and ``parent_id``, optionally
``created_at`` and ``links`` (``TopicSummary`` has them all)."""

_SUBTOPIC_KIND = "subtopic"
"""The link kind the tree draws already (``stores/link_kinds``; the viz imports no store)."""
_MERGED_KIND = "merged"

TimeIndex = Mapping[str, Sequence[str]]
"""Topic ids per day (``YYYY-MM-DD``), as ``topic_store.time_index()`` returns them."""


@dataclass(frozen=True)
class MapRow:
    """One row of the topic tree (and of the timeline beside it)."""

    kind: Literal["thread", "group", "topic"]
    depth: int
    """0 the thread, 1 a status group, 2 a top-level topic, 3 and more its subtopics."""
    label: str
    status: str
    """The topic's status; for a group, the status it groups; ``""`` for the thread."""
    parent_row: int | None
    """The row this one hangs from in the tree (None for the thread)."""
    topic: TopicMapInput | None = None
    days: tuple[date, ...] = ()
    """The days the topic was talked about, ascending (empty for the thread and groups)."""

    @property
    def is_subtopic(self) -> bool:
        """Whether this row hangs from another topic (rather than from its status group)."""
        return self.kind == "topic" and self.depth > 2


def _day(text: str) -> date | None:
    try:
        return date.fromisoformat(str(text)[:10])
    except ValueError:
        return None


def topic_days(time_index: TimeIndex) -> dict[str, list[date]]:
    """The days each topic was talked about, ascending (days that are not dates are skipped)."""
    days: dict[str, set[date]] = {}
    for text, topic_ids in time_index.items():
        day = _day(text)
        if day is None:
            continue
        for topic_id in topic_ids:
            days.setdefault(str(topic_id), set()).add(day)
    return {topic_id: sorted(found) for topic_id, found in days.items()}


def _status_rank(status: str) -> int:
    order = list(STATUS_COLOURS)
    return order.index(status) if status in order else len(order)


def topic_map_rows(topics: Sequence[TopicMapInput], time_index: TimeIndex) -> list[MapRow]:
    """The topic tree as rows, top to bottom: the thread, status groups, topics, subtopics.

    A topic whose ``parent_id`` names a topic of the list hangs from it (whatever its own
    status); every other topic hangs from the group of its status. Groups come in the order
    active, dormant, archived, anything else; topics within a group, and subtopics under their
    parent, in the order they were first talked about (then creation time, then input order).
    A cycle of ``parent_id`` (a hand-edited file) is broken by treating its topics as roots.
    """
    days = topic_days(time_index)
    position = {str(t["id"]): n for n, t in enumerate(topics)}

    def order(topic: TopicMapInput) -> tuple[date, str, int]:
        first = days.get(str(topic["id"]))
        created = str(topic.get("created_at") or "")
        return (first[0] if first else date.max, created, position[str(topic["id"])])

    by_id = {str(t["id"]): t for t in topics}
    children: dict[str, list[TopicMapInput]] = {}
    roots: list[TopicMapInput] = []
    for topic in topics:
        parent = topic.get("parent_id")
        if parent is not None and str(parent) in by_id and not _in_cycle(by_id, str(topic["id"])):
            children.setdefault(str(parent), []).append(topic)
        else:
            roots.append(topic)

    total = sum(int(t.get("message_count") or 0) for t in topics)
    rows = [
        MapRow(
            kind="thread",
            depth=0,
            label=f"{len(topics)} {'topic' if len(topics) == 1 else 'topics'}, {total} messages",
            status="",
            parent_row=None,
        )
    ]

    def add_topic(topic: TopicMapInput, depth: int, parent_row: int) -> None:
        topic_id = str(topic["id"])
        row = len(rows)
        rows.append(
            MapRow(
                kind="topic",
                depth=depth,
                label=str(topic["name"]),
                status=str(topic["status"]),
                parent_row=parent_row,
                topic=topic,
                days=tuple(days.get(topic_id, [])),
            )
        )
        for child in sorted(children.get(topic_id, []), key=order):
            add_topic(child, depth + 1, row)

    statuses = sorted({str(t["status"]) for t in roots}, key=lambda s: (_status_rank(s), s))
    for status in statuses:
        members = sorted((t for t in roots if str(t["status"]) == status), key=order)
        group_row = len(rows)
        rows.append(
            MapRow(
                kind="group",
                depth=1,
                label=f"{status} · {len(members)} {'topic' if len(members) == 1 else 'topics'}",
                status=status,
                parent_row=0,
            )
        )
        for topic in members:
            add_topic(topic, 2, group_row)
    return rows


def _in_cycle(by_id: Mapping[str, TopicMapInput], topic_id: str) -> bool:
    """Whether following ``parent_id`` from ``topic_id`` comes back to it."""
    seen: set[str] = set()
    current: str | None = topic_id
    while current is not None and current in by_id:
        if current in seen:  # the first repeat is where the cycle starts
            return current == topic_id
        seen.add(current)
        parent = by_id[current].get("parent_id")
        current = str(parent) if parent is not None else None
    return False


def _runs(days: Sequence[date]) -> list[tuple[date, date]]:
    """Consecutive days merged into ``(first, last)`` runs."""
    runs: list[tuple[date, date]] = []
    for day in days:
        if runs and day - runs[-1][1] == timedelta(days=1):
            runs[-1] = (runs[-1][0], day)
        else:
            runs.append((day, day))
    return runs


def _span(days: Sequence[date]) -> str:
    """First to last day and on how many days, e.g. ``2024-03-01 to 2024-06-01, on 3 days``."""
    if not days:
        return "no dated messages"
    if days[0] == days[-1]:
        return days[0].isoformat()
    return f"{days[0].isoformat()} to {days[-1].isoformat()}, on {len(days)} days"


def _label(text: str, limit: int = 40) -> str:
    """Text safe inside a Mermaid label (quotes, brackets, markup and separators removed)."""
    text = re.sub(r"[\"`\[\]{}<>|#;:\\\s]", " ", str(text))
    text = re.sub(r" {2,}", " ", text).strip() or "(unnamed)"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _node_id(topic_id: str) -> str:
    return "t_" + re.sub(r"\W", "_", topic_id, flags=re.ASCII)


def _messages(topic: TopicMapInput) -> str:
    count = int(topic.get("message_count") or 0)
    return f"{count} {'message' if count == 1 else 'messages'}"


def topic_map_mermaid(
    topics: Sequence[TopicMapInput], time_index: TimeIndex, *, title: str | None = None
) -> str:
    """A Mermaid ``flowchart`` of the topic tree.

    The thread, one node per status group, one node per topic (name, status, message count,
    first and last day, days talked about), an edge from each parent topic to its subtopics,
    topics coloured by status; each other link once as a dashed edge named by its kind
    (:func:`topic_links`), from a dashed node when its topic is not listed (a merged one).

    Args:
        topics: The thread's topics (``TopicMemory.topics``).
        time_index: Topics per day, days ascending (``topic_store.time_index()``).
        title: Shown on the thread node (e.g. ``thread alice``).

    Returns:
        Mermaid source of one diagram (what a ``.mmd`` file holds).
    """
    rows = topic_map_rows(topics, time_index)
    all_days = sorted({d for row in rows for d in row.days})
    head = _label(title, 60) + "<br/>" if title else ""
    lines = ["flowchart LR"]
    node_of: dict[int, str] = {}
    for number, row in enumerate(rows):
        if row.kind == "thread":
            node_of[number] = "thread"
            lines.append(f'  thread(["{head}{row.label}<br/>{_span(all_days)}"]):::thread')
        elif row.kind == "group":
            node_of[number] = "g_" + re.sub(r"\W", "_", row.status, flags=re.ASCII)
            lines.append(f'  {node_of[number]}["{_label(row.label)}"]:::group')
        else:
            assert row.topic is not None
            node_of[number] = _node_id(str(row.topic["id"]))
            status = row.status if row.status in STATUS_COLOURS else "other"
            label = (
                f"{_label(row.label)}<br/>{_label(row.status)}, {_messages(row.topic)}"
                f"<br/>{_span(row.days)}"
            )
            lines.append(f'  {node_of[number]}["{label}"]:::{status}')
        if row.parent_row is not None:
            arrow = "==>" if row.is_subtopic else "-->"
            lines.append(f"  {node_of[row.parent_row]} {arrow} {node_of[number]}")
    lines += _link_lines(topics)
    lines.append("  classDef thread fill:#eceff1,stroke:#455a64,color:#000")
    lines.append("  classDef group fill:#fff,stroke:#90a4ae,color:#37474f")
    lines.append("  classDef gone fill:#fff,stroke:#9e9e9e,stroke-dasharray:3 3,color:#616161")
    for status, colour in {**STATUS_COLOURS, "other": _OTHER_COLOUR}.items():
        lines.append(f"  classDef {status} fill:{colour},stroke:{colour},color:#fff")
    return "\n".join(lines) + "\n"


def topic_links(topics: Sequence[TopicMapInput]) -> list[tuple[str, str, str]]:
    """Each link between the topics as ``(from, to, kind)``, once, subtopic links left out.

    Both topics list a link; it is drawn once, from the topic listed first, except that a
    ``merged`` link goes from the topic not listed (retired into the other) to the listed one.
    """
    listed = {str(topic["id"]) for topic in topics}
    seen: set[tuple[str, frozenset[str]]] = set()
    edges: list[tuple[str, str, str]] = []
    for topic in topics:
        topic_id = str(topic["id"])
        for link in topic.get("links") or []:
            other, kind = str(link["topic_id"]), str(link["kind"])
            key = (kind, frozenset((topic_id, other)))
            if kind == _SUBTOPIC_KIND or other == topic_id or key in seen:
                continue
            seen.add(key)
            retired = kind == _MERGED_KIND and other not in listed
            edges.append((other, topic_id, kind) if retired else (topic_id, other, kind))
    return edges


def _link_lines(topics: Sequence[TopicMapInput]) -> list[str]:
    """Mermaid lines of the links: a dashed node per topic not listed, a dashed edge per link."""
    listed = {str(topic["id"]) for topic in topics}
    lines: list[str] = []
    for source, target, kind in topic_links(topics):
        for end in (source, target):
            if end not in listed:
                listed.add(end)
                what = "merged" if kind == _MERGED_KIND else "not listed"
                lines.append(f'  {_node_id(end)}["{_label(end)}<br/>{what}"]:::gone')
        end = ".->" if kind == _MERGED_KIND else ".-"  # a merge has a direction
        lines.append(f"  {_node_id(source)} -. {_label(kind, 20)} {end} {_node_id(target)}")
    return lines


def topic_timeline_mermaid(
    topics: Sequence[TopicMapInput], time_index: TimeIndex, *, title: str | None = None
) -> str:
    """A Mermaid ``gantt`` chart of the days each topic was talked about, to scale.

    One section per topic, in the tree's order (a subtopic's name starts with ``↳``), named with
    its status and message count; one bar per run of consecutive days. Active topics' bars are
    marked ``active``, dormant and archived ones ``done``, others ``crit``.

    Args:
        topics: The thread's topics (``TopicMemory.topics``).
        time_index: Topics per day, days ascending (``topic_store.time_index()``).
        title: The chart's title (default ``topics by day``).

    Returns:
        Mermaid source of one diagram.
    """
    rows = topic_map_rows(topics, time_index)
    lines = [
        "gantt",
        f"  title {_label(title, 80) if title else 'topics by day'}",
        "  dateFormat YYYY-MM-DD",
        "  axisFormat %Y-%m-%d",
        "  todayMarker off",
    ]
    for number, row in enumerate(rows):
        if row.kind != "topic" or not row.days or row.topic is None:
            continue
        mark = "↳ " * (row.depth - 2)
        lines.append(
            f"  section {mark}{_label(row.label)} ({_label(row.status)}, {_messages(row.topic)})"
        )
        tag = {"active": "active", "dormant": "done", "archived": "done"}.get(row.status, "crit")
        for run, (first, last) in enumerate(_runs(row.days)):
            # A task's name must not start with a digit.
            name = f"on {first}" if first == last else f"from {first} to {last}"
            length = (last - first).days + 1
            lines.append(f"    {name} :{tag}, r{number}_{run}, {first.isoformat()}, {length}d")
    return "\n".join(lines) + "\n"


def topic_map_markdown(
    topics: Sequence[TopicMapInput], time_index: TimeIndex, *, title: str | None = None
) -> str:
    """A Markdown page with both Mermaid diagrams (the tree, then the timeline)."""
    heading = f"# Topic map: {title}" if title else "# Topic map"
    tree = topic_map_mermaid(topics, time_index, title=title)
    timeline = topic_timeline_mermaid(topics, time_index, title=title)
    return (
        f"{heading}\n\n## Topics\n\n```mermaid\n{tree}```\n\n"
        f"## Timeline\n\n```mermaid\n{timeline}```\n"
    )


def topic_map_figure(
    topics: Sequence[TopicMapInput], time_index: TimeIndex, *, title: str | None = None
) -> Any:
    """The map as a matplotlib ``Figure`` (not attached to pyplot): tree left, timeline right.

    Args:
        topics: The thread's topics (``TopicMemory.topics``).
        time_index: Topics per day, days ascending (``topic_store.time_index()``).
        title: The figure's title (e.g. ``thread alice``).
    """
    from matplotlib import font_manager

    installed = {font.name for font in font_manager.fontManager.ttflist}
    fallbacks = [name for name in _CJK_FONTS if name in installed]
    import matplotlib

    with matplotlib.rc_context({"font.family": ["DejaVu Sans", *fallbacks]}):
        return _figure(topic_map_rows(topics, time_index), title)


def _figure(rows: Sequence[MapRow], title: str | None) -> Any:
    import matplotlib.dates as mdates
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    count = len(rows)
    figure = Figure(figsize=(14, 1.9 + 0.3 * count), layout="constrained")
    tree, timeline = figure.subplots(
        1, 2, sharey=True, gridspec_kw={"width_ratios": [1, 2], "wspace": 0.01}
    )
    indent = 0.045

    def x_of(row: MapRow) -> float:
        return 0.01 + indent * row.depth

    for number, row in enumerate(rows):
        x = x_of(row)
        if row.parent_row is not None:  # an elbow from the parent's marker down to this row
            parent_x = x_of(rows[row.parent_row]) + 0.012
            colour = _SUBTOPIC_COLOUR if row.is_subtopic else "#b0bec5"
            width = 1.4 if row.is_subtopic else 0.8
            tree.plot(
                [parent_x, parent_x, x],
                [row.parent_row + 0.25, number, number],
                color=colour,
                linewidth=width,
                solid_capstyle="butt",
            )
        if row.kind == "topic" and row.topic is not None:
            colour = STATUS_COLOURS.get(row.status, _OTHER_COLOUR)
            tree.plot([x + 0.012], [number], marker="s", markersize=6, color=colour, zorder=3)
            tree.text(
                x + 0.03,
                number,
                f"{_plain(row.label, 56)} ({int(row.topic.get('message_count') or 0)})",
                va="center",
                fontsize=8,
                color="#212121" if row.status in STATUS_COLOURS else _OTHER_COLOUR,
            )
            colour_line = STATUS_COLOURS.get(row.status, _OTHER_COLOUR)
            if row.days:
                start = datetime.combine(row.days[0], time())
                end = datetime.combine(row.days[-1], time()) + timedelta(days=1)
                timeline.plot(
                    [start, end],
                    [number, number],
                    color=colour_line,
                    alpha=0.3,
                    linewidth=5,
                    solid_capstyle="butt",
                )
                timeline.plot(
                    [datetime.combine(day, time(12)) for day in row.days],  # mid-day
                    [number] * len(row.days),
                    linestyle="",
                    marker="|",
                    markersize=9,
                    markeredgewidth=2,
                    color=colour_line,
                )
        else:
            weight = "bold"
            label = row.label if row.kind == "group" else _thread_label(row, title)
            tree.plot([x + 0.012], [number], marker="o", markersize=5, color="#546e7a", zorder=3)
            tree.text(x + 0.03, number, label, va="center", fontsize=8.5, fontweight=weight)
            if row.kind == "group":
                timeline.axhspan(number - 0.5, number + 0.5, color="#eceff1", zorder=0)

    tree.set_xlim(0, 1)
    tree.set_ylim(count - 0.5, -0.5)
    tree.axis("off")
    tree.set_title("topics by status, subtopics under their parent (messages)", fontsize=10)

    all_days = sorted({d for row in rows for d in row.days})
    if all_days:
        start = datetime.combine(all_days[0], time())
        end = datetime.combine(all_days[-1], time()) + timedelta(days=1)
        pad = max(timedelta(days=1), (end - start) * 0.03)
        timeline.set_xlim(start - pad, end + pad)
        locator = mdates.AutoDateLocator(minticks=3, maxticks=9)  # type: ignore[no-untyped-call]
        timeline.xaxis.set_major_locator(locator)
        iso = mdates.DateFormatter("%Y-%m-%d")  # type: ignore[no-untyped-call]
        timeline.xaxis.set_major_formatter(iso)
        timeline.tick_params(axis="x", labelrotation=30, labelsize=8)
        for label in timeline.get_xticklabels():
            label.set_horizontalalignment("right")
    else:
        timeline.text(
            0.5,
            0.5,
            "no dated messages yet",
            transform=timeline.transAxes,
            ha="center",
            va="center",
            color="#757575",
        )
        timeline.set_xticks([])
    timeline.tick_params(axis="y", left=False, labelleft=False)
    timeline.grid(axis="x", alpha=0.3)
    for side in ("left", "right", "top"):
        timeline.spines[side].set_visible(False)
    timeline.set_xlabel("date (to scale)", fontsize=8)
    timeline.set_title("when each topic was talked about", fontsize=10)

    statuses = list(STATUS_COLOURS)
    if any(r.kind == "topic" and r.status not in STATUS_COLOURS for r in rows):
        statuses.append("other")
    handles: list[Any] = [
        Patch(color=STATUS_COLOURS.get(status, _OTHER_COLOUR), label=status) for status in statuses
    ]
    handles += [
        Line2D(
            [],
            [],
            linestyle="",
            marker="|",
            markersize=9,
            markeredgewidth=2,
            color="#424242",
            label="a day it was talked about",
        ),
        Line2D([], [], linewidth=5, alpha=0.3, color="#424242", label="first to last day"),
        Line2D([], [], linewidth=1.4, color=_SUBTOPIC_COLOUR, label="parent → subtopic"),
    ]
    figure.legend(
        handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8, frameon=False
    )
    return figure


def _plain(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _thread_label(row: MapRow, title: str | None) -> str:
    return f"{_plain(title, 40)}: {row.label}" if title else f"thread: {row.label}"


def draw_topic_map(
    topics: Sequence[TopicMapInput],
    time_index: TimeIndex,
    path: Path,
    *,
    title: str | None = None,
) -> None:
    """Draw the tree (left) and the timeline (right) into a PNG at ``path``.

    Args:
        topics: The thread's topics (``TopicMemory.topics``).
        time_index: Topics per day, days ascending (``topic_store.time_index()``).
        path: Where the PNG goes.
        title: The figure's title (e.g. ``thread alice``).
    """
    with warnings.catch_warnings():
        # Without a CJK font Chinese names become boxes: not worth a warning per glyph.
        warnings.filterwarnings("ignore", message="Glyph .* missing from font")
        figure = topic_map_figure(topics, time_index, title=title)
        figure.savefig(path, dpi=110)


def topic_map_paths(path: str | Path) -> list[Path]:
    """The files :func:`write_topic_map` writes for ``path`` (two for a ``.mmd`` file)."""
    target = Path(path)
    if target.suffix.lower() == ".mmd":
        return [target, target.with_name(f"{target.stem}.timeline{target.suffix}")]
    return [target]


def write_topic_map(
    path: str | Path,
    topics: Sequence[TopicMapInput],
    time_index: TimeIndex,
    *,
    title: str | None = None,
) -> Path:
    """Write the map: Mermaid for ``.mmd`` and ``.md`` files, else a PNG.

    ``map.mmd`` gets the tree (:func:`topic_map_mermaid`) and ``map.timeline.mmd`` beside it the
    timeline (:func:`topic_timeline_mermaid`); ``map.md`` both, as a Markdown page.

    Returns:
        The path given (the first of :func:`topic_map_paths`).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    suffix = target.suffix.lower()
    if suffix == ".mmd":
        tree, timeline = topic_map_paths(target)
        tree.write_text(topic_map_mermaid(topics, time_index, title=title), "utf-8")
        timeline.write_text(topic_timeline_mermaid(topics, time_index, title=title), "utf-8")
    elif suffix == ".md":
        target.write_text(topic_map_markdown(topics, time_index, title=title), "utf-8")
    else:
        draw_topic_map(topics, time_index, target, title=title)
    return target
