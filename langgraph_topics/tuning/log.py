"""The tuning log (seed 000 §16): one JSON line per turn in ``threads/<thread>/tuning.jsonl``.

A line holds what §16 says to watch: each topic's score and sliding average, activations and
dormancies with their reason, how many messages each topic quoted, the share of the main window
taken by topic results, and per model role the calls, latency, tokens, retries and fallbacks.
Under the topic-window governor (``activation/governor.py``) each topic says how it was served
(``window``: ``read``, ``reused`` or ``skipped`` with the reason), and ``topic_windows`` totals
the turn's reads, reuses, skips and estimated input tokens against the cap.
"""

from __future__ import annotations

import errno
import json
import logging
import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from langgraph_topics.activation.grey import sliding_average
from langgraph_topics.settings import Settings
from langgraph_topics.state.records import AssembledContext, TopicRecord, TopicResult, TurnEvent
from langgraph_topics.stores.durable import fsync_directory
from langgraph_topics.tuning.role_stats import CallRecord, role_totals

log = logging.getLogger(__name__)

TUNING_FILE = "tuning.jsonl"
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT


def tuning_log_path(data_dir: Path, thread_directory: str) -> Path:
    """Where a thread's tuning log lives."""
    return Path(data_dir) / "threads" / thread_directory / TUNING_FILE


def tuning_line(
    *,
    time: str,
    thread_id: str,
    turn: int,
    mode: str,
    topics: Mapping[str, TopicRecord],
    results: Mapping[str, TopicResult],
    context: AssembledContext | None,
    events: Sequence[TurnEvent],
    records: Sequence[CallRecord],
    settings: Settings,
) -> dict[str, Any]:
    """The log line of one turn (a JSON-ready dict)."""
    prefix_shares = {
        r.topic_id: r.prefix_share
        for r in records
        if r.role == "topic_window" and r.topic_id is not None
    }
    skipped = {t: e for e in events if e["kind"] == "skipped" for t in e.get("topic_ids", [])}
    topic_lines: dict[str, Any] = {}
    for topic_id, record in topics.items():
        result = results.get(topic_id)
        if result is None and record["status"] != "active" and topic_id not in skipped:
            continue
        line: dict[str, Any] = {
            "name": record["name"],
            "status": record["status"],
            "score": result["relevance_score"] if result else None,
            "average": round(sliding_average(record["scores"], settings.score_window), 4),
            "referenced": len(result["referenced_message_ids"]) if result else 0,
            "round": result["round"] if result else None,
            "prompt_prefix_share": prefix_shares.get(topic_id),
        }
        # The governor's decision (activation/governor.py), for the back ends it governs.
        if result is not None and "window" in result:
            line["window"] = result["window"]
        elif result is None and topic_id in skipped:
            line["window"] = "skipped"
        if topic_id in skipped:  # read natively or not at all: why no model read it
            line["skipped"] = skipped[topic_id].get("reason", "")
            line["skip_detail"] = skipped[topic_id]["detail"]
        topic_lines[topic_id] = line
    governed = [r for r in results.values() if "window" in r]
    window: dict[str, Any] | None = None
    if context is not None:
        tokens = context["tokens"]
        window = {
            "tokens": tokens,
            "budget": context["budget"],
            "sections": dict(context["sections"]),
            "topic_share": round(context["sections"]["topics"] / tokens, 4) if tokens else 0.0,
            "quoted_messages": len(context["referenced_messages"]),
        }
    return {
        "time": time,
        "thread_id": thread_id,
        "turn": turn,
        "mode": mode,
        "active_topics": sum(1 for t in topics.values() if t["status"] == "active"),
        "topics": topic_lines,
        "referenced_messages": sum(t["referenced"] for t in topic_lines.values()),
        "events": [dict(e) for e in events],
        "main_window": window,
        "roles": role_totals(list(records)),
    } | (
        {
            "topic_windows": {
                "read": sum(1 for r in governed if r["window"] == "read"),
                "reused": sum(1 for r in governed if r["window"] == "reused"),
                "native": sum(1 for r in governed if r["window"] == "native"),
                "skipped": len(skipped),
                "input_tokens": sum(r.get("input_tokens", 0) for r in governed),
                "input_cap": settings.topic_window_input_tokens,
            }
        }
        if governed or skipped
        else {}
    )


def append_line(path: Path, line: Mapping[str, Any]) -> None:
    """Append one line; a failing disk is logged, never allowed to fail the turn.

    One ``write`` of the whole line on a descriptor opened for appending (as the file object
    did on closing), opened anew each time so that a log moved away is started again; the
    directory is made only when missing. No line is held back between turns.
    """
    data = (json.dumps(line, ensure_ascii=False, default=str) + "\n").encode("utf-8")
    try:
        try:
            fd = os.open(path, _APPEND, 0o644)
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, _APPEND, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            full = os.fstat(fd).st_size >= ROTATE_BYTES
        finally:
            os.close(fd)
        if full:
            rotate(path)
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            # The turn's own next write meets the full disk and says so in one error line:
            # the log's own failure is a warning beside it, not a second error.
            log.warning("could not append to the tuning log %s: disk full", path)
        else:
            log.exception("could not append to the tuning log %s", path)


ROTATE_BYTES = 4 * 2**20
"""A tuning log this long is compressed aside and started again: at about 2.4 KB a turn it
was the largest part of a long thread's data directory (1.6 KB of 5.5 KB per message at 2,000
turns); compressed, its lines take about a tenth of that."""


def rotate(path: Path) -> Path:
    """Compress ``path`` into ``tuning-<UTC time>.jsonl.zst`` beside it; start the log afresh.

    The log is renamed first (a turn appending meanwhile starts a new file), then compressed
    and the renamed copy removed; a copy a crash left renamed is compressed at the next
    rotation. Nothing of the log is lost: ``read_tuning_log(..., rotated=True)`` reads it all.
    """
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    pending = path.with_name(f"{path.name}.{stamp}.rotating")
    os.replace(path, pending)
    for leftover in sorted(path.parent.glob(f"{path.name}.*.rotating")):
        target = path.with_name(f"{path.stem}-{leftover.name.split('.')[-2]}.jsonl.zst")
        scratch = target.with_name(target.name + ".tmp")
        with leftover.open("rb") as source, scratch.open("wb") as compressed:
            _compress(source, compressed, leftover.stat().st_size)
            compressed.flush()
            os.fsync(compressed.fileno())
        os.replace(scratch, target)
        fsync_directory(path.parent)  # the compressed part is on disk before its source goes
        leftover.unlink()
    return path.with_name(f"{path.stem}-{stamp}.jsonl.zst")


_STREAM_BYTES = 2**16
"""Bytes read and written at a time while compressing a rotated log."""


def _compress(source: BinaryIO, target: BinaryIO, size: int) -> None:
    """Compress ``source`` into ``target`` a block at a time, with small match tables.

    A rotation runs inside a turn, in the thread of the node that logs it. Compressing the
    whole 4 MB at level 9 in one call grew that thread's malloc heap by ~23 MB of tables and
    buffers, kept as free bytes afterwards (glibc serves blocks that size from its heaps once
    its ``mmap`` threshold has risen): the largest step of ``bench soak``'s resident memory.
    A 512 KB window and 64K-entry tables grow it by under 2 MB and compress these lines
    smaller than level 9 did (221 KB against 237 KB for a 4 MB log).
    """
    import zstandard

    parameters = zstandard.ZstdCompressionParameters(
        window_log=19,
        hash_log=16,
        chain_log=16,
        search_log=5,
        min_match=5,
        strategy=zstandard.STRATEGY_LAZY2,
    )
    zstandard.ZstdCompressor(compression_params=parameters).copy_stream(
        source, target, size=size, read_size=_STREAM_BYTES, write_size=_STREAM_BYTES
    )


def read_tuning_log(path: Path, *, rotated: bool = False) -> list[dict[str, Any]]:
    """Every line of a tuning log (an empty list when there is none).

    ``rotated``: the compressed earlier parts first (``rotate``), oldest first.
    """
    texts: list[str] = []
    if rotated:
        import zstandard

        for part in sorted(path.parent.glob(f"{path.stem}-*.jsonl.zst")):
            texts.append(
                zstandard.ZstdDecompressor()
                .decompressobj()
                .decompress(part.read_bytes())
                .decode("utf-8")
            )
    if path.is_file():
        texts.append(path.read_text("utf-8"))
    return [json.loads(line) for text in texts for line in text.splitlines() if line.strip()]
