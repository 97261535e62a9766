"""A line-by-line audit of a thread's topic files, for ``check``.

The store itself skips what it cannot read and keeps the first copy of an id; an audit must
instead say where each record is (file and line) so that a person can find the damage.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from langgraph_topics.stores.jsonl_lines import decode_line
from langgraph_topics.stores.seq_ranges import SeqRanges, contains
from langgraph_topics.stores.topic_store import TOPICS_DIR

_ID_IN_DAMAGED_LINE = re.compile(rb'"id"\s*:\s*"((?:[^"\\]|\\.){1,200})"')


@dataclass(frozen=True)
class Place:
    """Where a record sits: a file of the thread (relative path) and its line number."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class TopicFilesAudit:
    """What the topic files hold, record by record."""

    branch: dict[str, list[Place]] = field(default_factory=dict)
    """Message ids of the branch being checked, with every place each is stored."""
    elsewhere: dict[str, list[Place]] = field(default_factory=dict)
    """Message ids of records no checkpoint of this branch recorded (another branch, or a
    write a crash cut off before its checkpoint)."""
    damaged: list[tuple[Place, str | None]] = field(default_factory=list)
    """Unreadable lines, with the message id the line seems to carry, if any."""
    torn: list[Place] = field(default_factory=list)
    """Last lines without their newline: the trace of a write a crash cut short."""

    def duplicates(self) -> dict[str, list[Place]]:
        """Branch ids stored more than once."""
        return {i: places for i, places in self.branch.items() if len(places) > 1}


def audit_topic_files(root: Path, ranges: SeqRanges | None) -> TopicFilesAudit:
    """Read every topic file of a thread directory and sort its message records by branch.

    Args:
        root: The thread's data directory.
        ranges: The branch's record ranges (``store_ranges``); ``None``: every record counts.
    """
    audit = TopicFilesAudit()
    directory = root / TOPICS_DIR
    for path in sorted(directory.glob("*.jsonl")) if directory.is_dir() else []:
        relative = f"{TOPICS_DIR}/{path.name}"
        lines = path.read_bytes().split(b"\n")
        tail = lines.pop()
        if tail.strip(b"\x00 \t\r"):
            audit.torn.append(Place(relative, len(lines) + 1))
        header_seen = False
        header_on_branch = True
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            place = Place(relative, number)
            record = decode_line(line)
            if record is None:
                found = _ID_IN_DAMAGED_LINE.search(line)
                audit.damaged.append(
                    (place, found.group(1).decode("utf-8", "replace") if found else None)
                )
                continue
            seq = record.get("seq")
            on_branch = (
                ranges is None
                or not isinstance(seq, int)
                or isinstance(seq, bool)
                or contains(ranges, seq)
            )
            if record.get("type") == "topic" and not header_seen:
                header_seen, header_on_branch = True, on_branch
                continue
            message_id = record.get("id")
            if record.get("type") != "message" or not isinstance(message_id, str):
                continue
            target = audit.branch if on_branch and header_on_branch else audit.elsewhere
            target.setdefault(message_id, []).append(place)
    return audit
