"""Sleeping topics that hold the question's best evidence wake before the fan-out (§4.7).

Grey activation puts a topic to sleep when the conversation leaves it; seed 000's index window
wakes it when the conversation comes back. The turn's evidence already searched every message
of the thread, the sleeping topics' included (seed 004 §3: history indexed once), so a topic
holding one of the question's best messages is woken at once, without a model call and
without waiting for the active topics to come back weak: a question about something said long
ago finds it even when the active topics happen to look relevant.
"""

from __future__ import annotations

from collections.abc import Mapping

from langgraph_topics.retrieval.evidence import UNSPLIT_GROUP, Evidence
from langgraph_topics.state.records import TopicRecord

BEST_MESSAGES = 5
"""The thread's best split messages whose sleeping topics wake: the evidence a window of any
budget holds first (a question's evidence ranks among them in most LoCoMo questions)."""


def sleeping_with_evidence(
    evidence: Evidence, topics: Mapping[str, TopicRecord], best: int = BEST_MESSAGES
) -> list[str]:
    """Dormant topics holding one of the thread's ``best`` split messages, best first."""
    return [
        topic_id
        for topic_id in holding_best(evidence, best)
        if topic_id in topics and topics[topic_id]["status"] == "dormant"
    ]


def holding_best(evidence: Evidence, best: int = BEST_MESSAGES) -> list[str]:
    """The topics holding one of the thread's ``best`` split messages, best first."""
    found: list[str] = []
    seen = 0
    # Four times as many positions: unsplit messages among the best belong to no topic.
    for position in evidence.top(4 * best):
        topic_id = evidence.group_of(position)
        if topic_id == UNSPLIT_GROUP:
            continue
        seen += 1
        if topic_id not in found:
            found.append(topic_id)
        if seen >= best:
            break
    return found
