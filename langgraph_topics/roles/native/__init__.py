"""Native role back ends: embeddings, keywords and extractive summaries, no language model.

This is the lightweight (semantic) mode: deterministic, offline, and fast enough to run every
role on every turn. Each back end implements one protocol of :mod:`langgraph_topics.roles`.
"""

from __future__ import annotations

from langgraph_topics.roles.native.brief_writer import NativeBriefWriter
from langgraph_topics.roles.native.calibration import calibrate
from langgraph_topics.roles.native.index_router import NativeIndexRouter
from langgraph_topics.roles.native.responder import NativeResponder
from langgraph_topics.roles.native.splitter import NativeSplitter
from langgraph_topics.roles.native.topic_window import NativeTopicWindow
from langgraph_topics.roles.protocols import Roles
from langgraph_topics.settings import Settings
from langgraph_topics.stores.protocols import Embedder


def references_for_budget(budget_tokens: int) -> int:
    """How many messages a native topic window offers: enough to fill the window alone.

    The assembler picks among every topic's offers by value, so a topic offers about as many
    messages as the budget could hold (a message takes some 30 tokens), between 24 and 200.
    """
    return max(24, min(200, budget_tokens // 30))


def native_roles(embedder: Embedder, settings: Settings | None = None) -> Roles:
    """Build the five native back ends around one embedder.

    Args:
        embedder: Shared by the splitter, the topic window, the brief writer and the responder.
        settings: Source of the reference threshold, the brief size, the summary limit and
            seed 003's continuity numbers (the specification's defaults when omitted).

    Returns:
        The roles, ready for the graph.
    """
    brief_bytes = settings.brief_bytes if settings is not None else 1024
    topic_window = NativeTopicWindow(
        embedder,
        reference_threshold=settings.reference_threshold if settings is not None else 0.3,
        summary_chars=settings.summary_soft_limit_chars if settings is not None else 2000,
        max_references=references_for_budget(settings.budget_tokens if settings else 8000),
    )
    return Roles(
        splitter=NativeSplitter(
            embedder,
            brief_bytes=brief_bytes,
            rules=settings.continuity_rules() if settings is not None else None,
        ),
        topic_window=topic_window,
        brief_writer=NativeBriefWriter(embedder, brief_bytes=brief_bytes),
        index_router=NativeIndexRouter(),
        responder=NativeResponder(embedder),
    )


__all__ = [
    "NativeBriefWriter",
    "NativeIndexRouter",
    "NativeResponder",
    "NativeSplitter",
    "NativeTopicWindow",
    "calibrate",
    "native_roles",
]
