"""Review step 2: merge near-duplicate topics (seed 000 §4.8 "相关话题 → 考虑合并")."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from langgraph_topics.review.actions import merge, written_ranges
from langgraph_topics.review.duplicates import (
    TopicProfile,
    merge_pairs,
    profile_text,
    topic_keywords,
)
from langgraph_topics.services import ThreadStores, TopicContext, services_of, thread_id_of
from langgraph_topics.settings import Settings
from langgraph_topics.state.records import MergeRecord, TopicRecord, TurnEvent
from langgraph_topics.state.review import ReviewState
from langgraph_topics.stores.protocols import Embedder


def _profiles(
    topics: dict[str, TopicRecord], stores: ThreadStores, embedder: Embedder, settings: Settings
) -> list[TopicProfile]:
    """The comparable (not archived, stored) topics, oldest first."""
    store = stores.topic_store
    order = {topic_id: rank for rank, topic_id in enumerate(store.topic_ids())}
    # A divided topic's subtopics are compared instead; the store refuses to merge it.
    comparable = [
        t for t in topics if topics[t]["status"] not in ("archived", "split") and t in order
    ]
    ids = sorted(comparable, key=lambda topic_id: order[topic_id])
    metas = [store.meta(topic_id) for topic_id in ids]
    vectors = embedder.embed([profile_text(m["name"], m["brief"]) for m in metas]) if ids else []
    return [
        TopicProfile(
            topic_id=topic_id,
            parent_id=meta["parent_id"],
            keywords=topic_keywords(store.messages(topic_id), settings.merge_keywords),
            vector=vector,
            rank=order[topic_id],
        )
        for topic_id, meta, vector in zip(ids, metas, vectors, strict=True)
    ]


def review_merge(state: ReviewState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Merge the most similar pair of duplicates, then look again, until none is left.

    The older topic of a pair is kept and the newer retired into it, so ids users have seen
    stay valid the longest. Looking again after each merge (the kept topic's brief is new)
    leaves nothing for a second review to merge: a review run twice is a no-op.
    """
    services = services_of(runtime)
    stores = services.branch_stores(thread_id_of(runtime), state)
    topics: dict[str, TopicRecord] = dict(state.get("topics") or {})
    events: list[TurnEvent] = []
    merged: list[MergeRecord] = []
    while True:
        profiles = _profiles(topics, stores, services.embedder, services.settings)
        parents = {topic_id: record["parent_id"] for topic_id, record in topics.items()}
        pairs = merge_pairs(profiles, parents, services.settings)
        if not pairs:
            break
        pair = pairs[0]
        retired = topics.pop(pair.retire)
        topics[pair.keep] = merge(services, stores, topics[pair.keep], retired)
        events.append(
            {
                "kind": "merged",
                "topic_ids": [pair.keep, pair.retire],
                "reason": f"similarity {pair.similarity:.2f}; shared {', '.join(pair.shared)}",
                "detail": f"{retired['name']} merged into {topics[pair.keep]['name']}",
            }
        )
        merged.append(
            {
                "into": pair.keep,
                "retired": pair.retire,
                "similarity": pair.similarity,
                "shared_keywords": list(pair.shared),
            }
        )
    if not merged:
        return {}
    return {**written_ranges(stores), "topics": topics, "events": events, "review_merged": merged}
