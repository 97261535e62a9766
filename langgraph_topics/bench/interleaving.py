"""One conversation woven from segments of several others, each message labelled by its source.

A **segment** is a stretch one source said in one go: a LoCoMo session of one conversation,
or one MemoryBank user's day. The segments of the sources are taken in turn (round robin: the
first segment of every source, then the second of every source that has one, …), so a source
comes back again and again after the others, and each segment's neighbours come from other
sources. A splitter that follows the subject opens a topic where a segment starts and goes back
to the source's earlier topic when it returns.

The woven conversation is one conversation between one user and one assistant:

- ids become ``<source>/<id>`` (``conv-26/D3:7``), unique across the sources;
- speaker names are left out, since two people of one conversation do not change names with
  the subject (a name would tell the sources apart by itself); each turn keeps its role;
- messages are restamped one minute apart in their new order from :data:`START`, with no
  longer pause where a segment starts: the switch has to be seen in what is said, not in a
  gap of days (time decay, seed 003, would mark those by itself).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import zip_longest
from typing import Any

from langgraph_topics.bench.subjects import MemoryBankUser
from langgraph_topics.datasets import LocomoConversation

START = datetime(2024, 1, 1, 9, 0)
STEP = timedelta(minutes=1)


@dataclass(frozen=True)
class Segment:
    """A stretch of one source, said in one go."""

    source: str
    """The conversation (or user) it comes from."""
    name: str
    """The source and the session or day (``conv-26 D3``)."""
    messages: Sequence[dict[str, Any]]


@dataclass(frozen=True)
class Interleaved:
    """A woven conversation and the truth to score its topics against."""

    name: str
    messages: list[dict[str, Any]]
    """Import records ``{id, role, content, timestamp}`` in their woven order."""
    sources: dict[str, str]
    """Message id → its source."""
    segments: dict[str, str]
    """Message id → its segment's name."""


def _by_session(source: str, messages: Sequence[dict[str, Any]]) -> list[Segment]:
    """A source's messages cut where the session part of the id (``D3`` of ``D3:7``) changes."""
    segments: list[Segment] = []
    current: list[dict[str, Any]] = []
    session = None
    for message in messages:
        key = str(message["id"]).split(":", 1)[0]
        if current and key != session:
            segments.append(Segment(source, f"{source} {session}", current))
            current = []
        session = key
        current.append(message)
    if current:
        segments.append(Segment(source, f"{source} {session}", current))
    return segments


def locomo_segments(conversations: Sequence[LocomoConversation]) -> dict[str, list[Segment]]:
    """Each LoCoMo conversation's sessions, in order, by sample id."""
    return {c.sample_id: _by_session(c.sample_id, c.messages) for c in conversations}


def memorybank_segments(users: Sequence[MemoryBankUser]) -> dict[str, dict[str, list[Segment]]]:
    """Each MemoryBank user's days, in order, by user, grouped by language.

    Languages are woven apart: a switch from Chinese to English would be no test.
    """
    grouped: dict[str, dict[str, list[Segment]]] = {}
    for user in users:
        days = _by_session(user.conversation_id, user.messages)
        grouped.setdefault(user.language, {})[user.conversation_id] = days
    return grouped


def interleave(name: str, by_source: Mapping[str, Sequence[Segment]]) -> Interleaved:
    """Weave the sources' segments round robin into one conversation (module docstring).

    Raises:
        ValueError: Fewer than two sources with messages: nothing to interleave.
    """
    kept = {source: segments for source, segments in by_source.items() if segments}
    if len(kept) < 2:
        raise ValueError(f"{name}: interleaving needs two sources or more, got {len(kept)}")
    messages: list[dict[str, Any]] = []
    sources: dict[str, str] = {}
    segment_names: dict[str, str] = {}
    for round_ in zip_longest(*kept.values()):
        for segment in round_:
            if segment is None:  # this source has no more segments
                continue
            for message in segment.messages:
                woven_id = f"{segment.source}/{message['id']}"
                messages.append(
                    {
                        "id": woven_id,
                        "role": message["role"],
                        "content": message["content"],
                        "timestamp": (START + STEP * len(messages)).isoformat(),
                    }
                )
                sources[woven_id] = segment.source
                segment_names[woven_id] = segment.name
    return Interleaved(name, messages, sources, segment_names)
