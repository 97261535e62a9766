"""Which undivided topic each subtopic comes from: the evidence prior and the window read these.

The prior on a message is the strength of its topic's best messages (``retrieval/evidence``).
On its subtopic alone, a subtopic holding none of a large topic's best messages would drop its
messages below the unsplit ones, and at large budgets the window would quote less of what the
topic holds (0.944 against 0.948 evidence recall at 8,000 tokens); on its root alone, siblings
could no longer be told apart (0.792 against 0.807 at 2,000). A subtopic's prior is therefore
half its own and half its root's (``evidence.SUBTOPIC_PRIOR_SHARE``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from langgraph_topics.state.records import TopicRecord, TopicResult
from langgraph_topics.stores.protocols import TopicStore


def prior_families(topics: Mapping[str, TopicRecord]) -> dict[str, str]:
    """Each subtopic of the registry mapped to its root (topics without a parent left out).

    A parent unknown to the registry ends the walk there; a cycle (hand-edited records) ends it
    where it closes.

    Every node of a turn asks (several times), and a long thread's topics are mostly
    subtopics of subtopics: walking each one's chain alone cost O(topics × depth) a call, so
    the roots found are shared along each chain walked.
    """
    roots: dict[str, str] = {}  # a topic (with or without a parent) to the top of its chain
    families: dict[str, str] = {}
    for topic_id in topics:
        if topic_id in roots:
            continue
        chain, seen = [topic_id], {topic_id}
        node = topic_id
        while True:
            above = topics[node].get("parent_id")
            if above is None or above not in topics:
                top = roots.get(node, node)
                break
            if above in roots:
                top = roots[above]
                break
            if above in seen:  # a cycle: each topic on it keeps the walk of its own
                top = ""
                break
            chain.append(above)
            seen.add(above)
            node = above
        if not top:
            for member in chain:
                roots[member] = _walked_root(topics, member)
        else:
            for member in chain:
                roots[member] = top
    for topic_id, record in topics.items():
        parent = record.get("parent_id")
        if parent is not None and parent in topics:
            families[topic_id] = roots[topic_id]
    return families


def _walked_root(topics: Mapping[str, TopicRecord], topic_id: str) -> str:
    """The root of ``topic_id`` by its own walk, stopped where a cycle closes."""
    parent = topics[topic_id].get("parent_id")
    if parent is None or parent not in topics:
        return topic_id
    root, seen = parent, {topic_id}
    while True:
        seen.add(root)
        above = topics[root].get("parent_id")
        if above is None or above not in topics or above in seen:
            return root
        root = above


def family_heads(
    topic_ids: Iterable[str], families: Mapping[str, str], store: TopicStore
) -> dict[str, TopicResult]:
    """For each subtopic among ``topic_ids``, its family's root as a window block's header.

    The root's name and brief (kept over its children by the division) head the block its
    subtopics' quotes are rendered in; the score is the block's best subtopic's, set by the
    assembler. A root the store no longer knows leaves its subtopics as blocks of their own.
    """
    heads: dict[str, TopicResult] = {}
    for topic_id in topic_ids:
        root = families.get(topic_id)
        if root is None:
            continue
        try:
            meta = store.meta(root)
        except KeyError:
            continue
        heads[topic_id] = {
            "topic_id": root,
            "name": meta["name"],
            "brief": meta["brief"],
            "file": meta["file"],
            "relevance_score": 0.0,
            "referenced_message_ids": [],
            "summary": "",
            "round": 0,
        }
    return heads
