"""Draw a thread's topic hierarchy and timeline: a PNG (matplotlib) or Mermaid text.

Input is what :meth:`TopicMemory.topics` lists and the topic store's ``time_index()`` (topics
per day). matplotlib is imported only when a PNG is drawn, with the Agg back end, so the map
works on machines without a display.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

STATUS_COLOURS = {"active": "#2e7d32", "dormant": "#9e9e9e", "archived": "#6d4c41"}
"""Colour per topic status; anything else (e.g. ``unregistered``) is drawn in orange."""
_OTHER_COLOUR = "#ef6c00"
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


TopicMapInput = Mapping[str, Any]
"""A topic with ``id``, ``name``, ``status``, ``message_count`` and ``parent_id``
(``TopicSummary`` has them all)."""


def _ordered_tree(topics: Sequence[TopicMapInput]) -> list[tuple[int, TopicMapInput]]:
    """Topics depth-first (roots in the given order), each with its depth."""
    ids = {t["id"] for t in topics}
    children: dict[str | None, list[TopicMapInput]] = {}
    for topic in topics:
        parent = topic["parent_id"] if topic["parent_id"] in ids else None
        children.setdefault(parent, []).append(topic)
    ordered: list[tuple[int, TopicMapInput]] = []
    seen: set[str] = set()

    def visit(parent: str | None, depth: int) -> None:
        for topic in children.get(parent, []):
            if topic["id"] not in seen:  # guards against a cycle in hand-edited files
                seen.add(topic["id"])
                ordered.append((depth, topic))
                visit(topic["id"], depth + 1)

    visit(None, 0)
    return ordered


def _label(text: str, limit: int = 40) -> str:
    """Text safe inside a Mermaid quoted label."""
    text = re.sub(r"[\"\[\]{}<>|#]", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _node_id(topic_id: str) -> str:
    return "t_" + re.sub(r"\W", "_", topic_id)


def topic_map_mermaid(
    topics: Sequence[TopicMapInput], time_index: Mapping[str, Sequence[str]]
) -> str:
    """A Mermaid flowchart: the topic hierarchy, and the days each topic was talked about.

    Args:
        topics: The thread's topics (``TopicMemory.topics``).
        time_index: Topics per day, days ascending (``topic_store.time_index()``).

    Returns:
        Mermaid source; paste it into any Mermaid renderer (GitHub renders ``.mmd`` blocks).
    """
    lines = ["flowchart LR", '  subgraph hierarchy["topic hierarchy"]', "    direction TB"]
    for _, topic in _ordered_tree(topics):
        label = f"{_label(topic['name'])}<br/>{topic['status']}, {topic['message_count']} messages"
        lines.append(f'    {_node_id(topic["id"])}["{label}"]')
    known = {t["id"] for t in topics}
    for topic in topics:
        if topic["parent_id"] in known:
            lines.append(f"    {_node_id(topic['parent_id'])} --> {_node_id(topic['id'])}")
    lines.append("  end")
    lines += ['  subgraph timeline["timeline (topics per day)"]', "    direction TB"]
    days = list(time_index)
    name_of = {t["id"]: str(t["name"]) for t in topics}
    for number, day in enumerate(days):
        names = ", ".join(_label(name_of.get(t, str(t)), 24) for t in time_index[day])
        lines.append(f'    d{number}["{day}: {names}"]')
    lines += [f"    d{n} --> d{n + 1}" for n in range(len(days) - 1)]
    lines.append("  end")
    for status, colour in STATUS_COLOURS.items():
        members = [_node_id(t["id"]) for t in topics if t["status"] == status]
        if members:
            lines.append(f"  classDef {status} fill:{colour},color:#fff")
            lines.append(f"  class {','.join(members)} {status}")
    return "\n".join(lines) + "\n"


def draw_topic_map(
    topics: Sequence[TopicMapInput], time_index: Mapping[str, Sequence[str]], path: Path
) -> None:
    """Draw the hierarchy (left) and the timeline (right) into a PNG at ``path``.

    Args:
        topics: The thread's topics (``TopicMemory.topics``).
        time_index: Topics per day, days ascending (``topic_store.time_index()``).
        path: Where the PNG goes.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import font_manager
    from matplotlib.lines import Line2D

    installed = {font.name for font in font_manager.fontManager.ttflist}
    fallbacks = [name for name in _CJK_FONTS if name in installed]
    with plt.rc_context({"font.family": ["DejaVu Sans", *fallbacks]}), warnings.catch_warnings():
        # Without a CJK font Chinese names become boxes: not worth a warning per glyph.
        warnings.filterwarnings("ignore", message="Glyph .* missing from font")
        _draw(topics, time_index, path, plt, Line2D)


def _draw(
    topics: Sequence[TopicMapInput],
    time_index: Mapping[str, Sequence[str]],
    path: Path,
    plt: Any,
    line_2d: Any,
) -> None:
    tree = _ordered_tree(topics)
    days = list(time_index)
    rows = max(len(tree), 1)
    figure, (left, right) = plt.subplots(
        1,
        2,
        figsize=(14, 1.2 + 0.35 * rows),
        gridspec_kw={"width_ratios": [1, 1.4]},
        sharey=True,
    )
    row_of: dict[str, int] = {}
    for row, (depth, topic) in enumerate(tree):
        row_of[topic["id"]] = row
        colour = STATUS_COLOURS.get(topic["status"], _OTHER_COLOUR)
        left.text(
            0.02 + 0.06 * depth,
            row,
            f"{'└ ' if depth else ''}{_label(topic['name'], 34)} ({topic['message_count']})",
            va="center",
            fontsize=8,
            color=colour,
        )
    left.set_xlim(0, 1)
    left.set_ylim(rows - 0.5, -0.5)
    left.axis("off")
    left.set_title("topic hierarchy (messages)")
    for column, day in enumerate(days):
        ys = [row_of[t] for t in time_index[day] if t in row_of]
        colours = [STATUS_COLOURS.get(tree[y][1]["status"], _OTHER_COLOUR) for y in ys]
        right.scatter([column] * len(ys), ys, c=colours, s=30, marker="s")
    right.set_xticks(range(len(days)))
    right.set_xticklabels(days, rotation=60, ha="right", fontsize=7)
    right.set_yticks([])
    right.set_xlim(-0.5, max(len(days), 1) - 0.5)
    right.grid(axis="x", alpha=0.3)
    right.set_title("timeline: days each topic was talked about")
    handles = [
        line_2d([], [], marker="s", linestyle="", color=c, label=s)
        for s, c in STATUS_COLOURS.items()
    ]
    right.legend(handles=handles, loc="upper right", fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write_topic_map(
    path: str | Path, topics: Sequence[TopicMapInput], time_index: Mapping[str, Sequence[str]]
) -> Path:
    """Write the map as Mermaid text when ``path`` ends with ``.mmd``, else as a PNG.

    Returns:
        The path written.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.suffix.lower() == ".mmd":
        target.write_text(topic_map_mermaid(topics, time_index), "utf-8")
    else:
        draw_topic_map(topics, time_index, target)
    return target
