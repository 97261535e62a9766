"""``bench topics --interleaved``: topics scored against each message's source, woven sources.

The sessions of the LoCoMo conversations (and, with ``--memorybank``, the days of the
MemoryBank users of each language) are woven round robin into one conversation
(``bench/interleaving.py``), imported at each budget with the offline native back ends (as
``bench topics`` imports), and the memory's topics (the unsplit tail one more block) are scored
against the source of each message (``bench/partition_scores.py``): homogeneity,
completeness, V-measure and B³ precision, recall and F1. Beside them, in the same run:

- **chunks of 20 messages**: cut by count only;
- **one topic per message pair**: each pair of consecutive messages its own topic;
- **one topic per segment** (a reference, not a baseline): every switch found, no return
  recognised; what perfect cuts alone reach;
- **one topic for all** (a reference): B³ recall 1 and precision the sum of the squared
  source shares, so with five equal sources B³-F1 is 0.33 for no work at all (and V-measure
  0): B³-F1 alone rewards coarse topics, and is read beside V-measure.

A source spans many segments, so completeness and B³ recall reward a splitter that goes back
to a source's earlier topic when it returns; homogeneity and B³ precision one that cuts where a
segment ends.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from langgraph_topics.bench.interleaving import (
    Interleaved,
    interleave,
    locomo_segments,
    memorybank_segments,
)
from langgraph_topics.bench.partition_scores import score_partition
from langgraph_topics.bench.partitions import UNSPLIT, fixed_chunks
from langgraph_topics.bench.recall import load_conversations
from langgraph_topics.bench.subjects import load_memorybank_users
from langgraph_topics.bench.topics import MEMORY, TopicsConfig, import_partition

Progress = Callable[[str], None]
CHUNK_MESSAGES = 20
CHUNKS = f"chunks of {CHUNK_MESSAGES} messages"
PAIRS = "one topic per message pair"
SEGMENTS = "one topic per segment"
ONE_TOPIC = "one topic for all"
REFERENCES = (SEGMENTS, ONE_TOPIC)
BASELINES = (CHUNKS, PAIRS)
LOCOMO = "locomo"


def woven_conversations(config: TopicsConfig) -> list[Interleaved]:
    """The LoCoMo conversations woven into one, then each MemoryBank language's users.

    Raises:
        SystemExit: Fewer than two conversations (or users of a language) to weave.
    """
    conversations = load_conversations(config.data, config.conversations)
    by_source = {LOCOMO: locomo_segments(conversations)}
    if config.memorybank is not None:
        users = load_memorybank_users(config.memorybank)
        for language, by_user in memorybank_segments(users).items():
            by_source[f"memorybank-{language}"] = by_user
    try:
        return [interleave(name, segments) for name, segments in by_source.items()]
    except ValueError as error:
        raise SystemExit(f"bench topics --interleaved: {error}") from None


def scored(truth: Mapping[str, str], partition: Mapping[str, str]) -> dict[str, Any]:
    """The partition's scores against the truth, with its block count and largest share."""
    sizes = Counter(partition[m] for m in truth)
    return {
        "blocks": len(sizes),
        "largest_share": round(max(sizes.values()) / len(truth), 4),
        **score_partition(truth, partition).rounded(),
    }


def run_conversation(
    conversation: Interleaved, config: TopicsConfig, progress: Progress
) -> dict[str, Any]:
    """Score the baselines, then the memory at every budget, for one woven conversation."""
    ids = [str(m["id"]) for m in conversation.messages]
    truth = conversation.sources
    baselines = {
        CHUNKS: scored(truth, fixed_chunks(ids, CHUNK_MESSAGES)),
        PAIRS: scored(truth, fixed_chunks(ids, 2)),
    }
    entry: dict[str, Any] = {
        "conversation": conversation.name,
        "messages": len(ids),
        "sources": len(set(truth.values())),
        "segments": len(set(conversation.segments.values())),
        "baselines": baselines,
        "reference": {
            SEGMENTS: scored(truth, conversation.segments),
            ONE_TOPIC: scored(truth, dict.fromkeys(ids, ONE_TOPIC)),
        },
        "budgets": {},
    }
    for budget in config.budgets:
        partition, seconds = import_partition(
            conversation.name, conversation.messages, budget, config, progress
        )
        figures = scored(truth, partition)
        figures["unsplit"] = Counter(partition.values())[UNSPLIT]
        figures["import_seconds"] = round(seconds, 1)
        # What issue 36 asks of the topics: at least as good as each baseline on both.
        figures["beats_baselines"] = {
            key: all(figures[key] >= baselines[name][key] for name in BASELINES)
            for key in ("b3_f1", "v_measure")
        }
        entry["budgets"][str(budget)] = figures
        progress(
            f"{conversation.name} @{budget}: {MEMORY} B³-F1 {figures['b3_f1']:.3f}, "
            f"V {figures['v_measure']:.3f} ({CHUNKS}: {baselines[CHUNKS]['b3_f1']:.3f}, "
            f"{baselines[CHUNKS]['v_measure']:.3f}) in {seconds:.0f} s"
        )
    return entry


def run_interleaved(config: TopicsConfig, progress: Progress) -> dict[str, Any]:
    """Weave, import and score every conversation at every budget; returns the report."""
    started = time.perf_counter()
    woven = woven_conversations(config)
    for conversation in woven:
        progress(
            f"{conversation.name}: {len(conversation.messages)} messages in "
            f"{len(set(conversation.segments.values()))} segments of "
            f"{len(set(conversation.sources.values()))} sources"
        )
    entries = [run_conversation(conversation, config, progress) for conversation in woven]
    return {
        "config": {
            "data": str(config.data),
            "memorybank": str(config.memorybank) if config.memorybank else None,
            "budgets": config.budgets,
            "conversations": list(dict.fromkeys(woven[0].sources.values())),
            "token_estimate": config.token_estimate,
            "chunk_messages": CHUNK_MESSAGES,
        },
        "conversations": entries,
        "timings": {"total_seconds": round(time.perf_counter() - started, 1)},
    }
