"""Native index router: re-ranks index candidates with keyword overlap (seed 000 §6.3)."""

from __future__ import annotations

from collections.abc import Sequence

from langgraph_topics.keywords import extract_keywords, shared_keywords, term_coverage
from langgraph_topics.roles.protocols import RoutedTopic, TopicInfo

_SHALLOW_CUT = 0.2
"""A normal (not deep) search drops candidates under this relevance: "avoid over-matching"."""
_REASON_KEYWORDS = 5


class NativeIndexRouter:
    """Blends each candidate's index similarity with the query terms its brief mentions.

    Keywords can only raise a candidate, never lower it: the index similarity already captures
    meaning across languages (an English question about a Chinese topic shares no keyword with
    it), and a shared entity name or term is extra evidence on top of that.

    Args:
        keyword_weight: Weight of the keyword evidence in the blend
            ``max(similarity, (1 - w) · similarity + w · coverage)``, where ``coverage`` is the
            share of the query's terms that the topic's name and brief mention.
    """

    def __init__(self, *, keyword_weight: float = 0.3) -> None:
        self.keyword_weight = keyword_weight

    def route(
        self, query: str, candidates: Sequence[tuple[TopicInfo, float]], *, deep: bool
    ) -> list[RoutedTopic]:
        """Rank the candidates for ``query``, best first, with a relevance in [0, 1] each.

        Args:
            query: What the conversation needs (the activation query).
            candidates: Topics from the index with their similarity in [0, 1].
            deep: Keep every candidate (a recall cue: the user says something was forgotten);
                otherwise drop candidates under 0.2.

        Returns:
            One routed topic per distinct candidate, highest relevance first.
        """
        query_keywords = extract_keywords(query)
        routed: list[RoutedTopic] = []
        seen: set[str] = set()
        for topic, similarity in candidates:
            if topic["id"] in seen:
                continue
            seen.add(topic["id"])
            similarity = min(1.0, max(0.0, float(similarity)))
            described = f"{topic['name']}\n{topic['brief']}"
            coverage = term_coverage(query, described)
            blended = (1 - self.keyword_weight) * similarity + self.keyword_weight * coverage
            relevance = round(max(similarity, blended), 4)
            if not deep and relevance < _SHALLOW_CUT:
                continue
            shared = shared_keywords(query_keywords, described)[:_REASON_KEYWORDS]
            reason = f"similarity {similarity:.2f}, " + (
                f"shared keywords: {', '.join(shared)}" if shared else "no shared keywords"
            )
            routed.append({"topic_id": topic["id"], "relevance": relevance, "reason": reason})
        # sorted() is stable: ties keep the index's order.
        return sorted(routed, key=lambda r: -r["relevance"])
