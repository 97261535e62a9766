"""Draw a theme's timeline (``TopicMemory.trace``): Mermaid text, or a PNG with matplotlib.

- **Mermaid**: a ``timeline`` diagram, one period per event unit (its date), listing what
  happened: the first and last mention, each change of state ("chose Postgres", "switched to
  SQLite") and the unit's summary. A ``.mmd`` file holds the diagram; a ``.md`` file holds it
  as a fenced ``mermaid`` block (GitHub renders it).
- **PNG**: the units as dots on a real date axis, the changes of state as labelled markers
  above them. matplotlib is imported only when a PNG is drawn (it is in the ``dev`` and
  ``bench`` extras, not a runtime dependency), and the figure is drawn without pyplot.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from langgraph_topics.errors import InputError
from langgraph_topics.history.timeline import StateChange, ThemeTrace

_MARKS = {"first": "first mention", "last": "last mention", "only": "only mention"}
_VERBS = {"chose": "chose", "switched": "switched to", "dropped": "dropped"}
_UNSAFE = re.compile(r"[:#;\n\r`]")


def state_label(state: StateChange | Mapping[str, Any]) -> str:
    """``chose Postgres``, ``switched to SQLite``, ``dropped Redis``."""
    return f"{_VERBS.get(str(state['kind']), str(state['kind']))} {state['object']}"


def _text(text: str, limit: int = 60) -> str:
    plain = _UNSAFE.sub(" ", " ".join(text.split()))
    return plain if len(plain) <= limit else plain[: limit - 1] + "…"


def theme_timeline_mermaid(trace: ThemeTrace) -> str:
    """The trace as a Mermaid ``timeline`` diagram."""
    lines = ["timeline", f"    title {_text(trace['theme'])}"]
    for entry in trace["timeline"]:
        when = (entry["start"] or "undated")[:10]
        events = [_MARKS[entry["mark"]]] if entry["mark"] in _MARKS else []
        events += [state_label(s) for s in entry["states"]]
        events.append(_text(entry["summary"]) or entry["unit_id"])
        ids = entry["message_ids"]
        events.append(f"messages {ids[0]}…{ids[-1]}" if len(ids) > 1 else f"message {ids[0]}")
        lines.append(f"    {when} : " + " : ".join(_text(e) for e in events))
    return "\n".join(lines) + "\n"


def theme_timeline_markdown(trace: ThemeTrace) -> str:
    """A Markdown page holding the diagram."""
    return f"# {trace['theme']}\n\n```mermaid\n{theme_timeline_mermaid(trace)}```\n"


def theme_timeline_figure(trace: ThemeTrace) -> Any:
    """The trace as a matplotlib ``Figure`` (not attached to pyplot)."""
    try:
        import matplotlib
        from matplotlib import font_manager
    except ImportError:
        raise InputError(
            "a PNG needs matplotlib (pip install matplotlib); a .mmd or .md file needs nothing"
        ) from None
    from langgraph_topics.viz.topic_map import CJK_FONTS

    installed = {font.name for font in font_manager.fontManager.ttflist}
    fallbacks = [name for name in CJK_FONTS if name in installed]
    with matplotlib.rc_context({"font.family": ["DejaVu Sans", *fallbacks]}):
        return _figure(trace)


def _figure(trace: ThemeTrace) -> Any:
    import matplotlib.dates as mdates
    from matplotlib.figure import Figure

    dated = [(e, _moment(e["start"])) for e in trace["timeline"]]
    points = [(e, when) for e, when in dated if when is not None]
    figure = Figure(figsize=(10, 3.2))
    axes = figure.add_subplot()
    axes.set_title(trace["theme"])
    axes.set_yticks([])
    for entry, when in points:
        x = float(mdates.date2num(when))  # type: ignore[no-untyped-call]
        axes.plot([x], [0], "o", color="#1565c0" if entry["states"] else "#9e9e9e")
        for height, state in enumerate(entry["states"], start=1):
            axes.annotate(
                state_label(state),
                (x, 0),
                xytext=(0, 14 * height),
                textcoords="offset points",
                ha="center",
                fontsize=8,
            )
    axes.set_ylim(-1, 2)
    axes.xaxis_date()
    axes.xaxis.set_major_formatter(mdates.DateFormatter("%Y-%m-%d"))  # type: ignore[no-untyped-call]
    figure.autofmt_xdate()
    return figure


def _moment(stamp: str | None) -> datetime | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp)
    except ValueError:
        return None


def write_theme_timeline(path: str | Path, trace: ThemeTrace) -> Path:
    """Write the trace: Mermaid for ``.mmd``, a Markdown page for ``.md``, else a PNG."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    suffix = target.suffix.lower()
    if suffix == ".mmd":
        target.write_text(theme_timeline_mermaid(trace), "utf-8")
    elif suffix == ".md":
        target.write_text(theme_timeline_markdown(trace), "utf-8")
    else:
        figure = theme_timeline_figure(trace)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Glyph .* missing from font")
            figure.savefig(target, dpi=110)
    return target
