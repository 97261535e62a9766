"""Topics quoted together for one answer are related (a ``related`` link between the best two).

Runs in every chat turn's bookkeeping, so the common cases cost a few set operations: a window
quoting fewer than two topics stops at once, and a pair linked before is a lookup
(``quiet.link_once``), not a store call.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations

from langgraph_topics.links.quiet import link_once
from langgraph_topics.state.records import AssembledContext, TopicResult
from langgraph_topics.stores.link_kinds import RELATED_LINK
from langgraph_topics.stores.protocols import TopicStore


def quoted_topics(
    context: AssembledContext | None, results: Mapping[str, TopicResult]
) -> list[str]:
    """The topics the window quotes messages of, in the window's order.

    A topic shown by its summary alone is left out: only quoting puts two topics' own words
    side by side for one answer.
    """
    if not context or len(context["topic_ids"]) < 2:
        return []
    quoted = {message["id"] for message in context["referenced_messages"]}
    return [
        topic_id
        for topic_id in context["topic_ids"]
        if topic_id in results
        and not quoted.isdisjoint(results[topic_id]["referenced_message_ids"])
    ]


RELATED_PER_ANSWER = 2
"""The best quoted topics of a window that are linked. A window of the native topic window
quotes several topics, most of them for a message or two: linking every pair wrote 1,939 links
in 120 turns continuing a 5,800-turn ``bench soak`` thread (a synced append each), and would
soon relate most topics to most others. The two best carry the answer."""


def link_quoted_together(
    store: TopicStore, context: AssembledContext | None, results: Mapping[str, TopicResult]
) -> bool:
    """Link the window's best quoted topics to each other; whether the store was asked.

    A pair is linked from its smaller id to the larger, so that the same two topics quoted in
    the other order make no second link.
    """
    best = quoted_topics(context, results)[:RELATED_PER_ANSWER]
    asked = False
    for first, second in combinations(sorted(best), 2):
        asked = link_once(store, first, second, RELATED_LINK) or asked
    return asked
