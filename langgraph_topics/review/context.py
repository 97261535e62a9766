"""The review graph's run context: the topic graph's, plus the archive guard seam."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langgraph_topics.services import TopicContext


@dataclass
class ReviewContext(TopicContext):
    """``TopicContext`` with what only a review reads.

    ``archive_guard`` is an ``ArchiveGuard`` (``review.criteria``) that may keep topics the
    criteria would archive (memory tiers, pins); typed ``Any``, as ``services`` is, so that the
    Studio server can still draw the schema.
    """

    archive_guard: Any = None
