"""When a topic is too large for its window, and how large its subtopics may be (§4.5)."""

from __future__ import annotations

from langgraph_topics.settings import Settings

PART_SHARE = 0.5
"""A subtopic starts at most at this share of the limit, so that it has room to grow before
it is divided in turn."""


def topic_limit(settings: Settings) -> int:
    """The tokens past which a topic is divided into subtopics.

    ``topic_window_share`` of the cheap model's context when ``cheap_context_tokens`` says how
    large it is; the native size limit ``subtopic_limit_tokens`` otherwise.
    """
    if settings.cheap_context_tokens:
        return max(1, int(settings.topic_window_share * settings.cheap_context_tokens))
    return settings.subtopic_limit_tokens


def part_cap(limit: int, refused_tokens: int | None = None) -> int:
    """The most tokens one subtopic of a divided topic starts with.

    Args:
        limit: The topic limit (:func:`topic_limit`).
        refused_tokens: The size of the topic when its window's prompt was refused as too long
            (a provider 400): the parts then start at half of it at most, whatever the limit.
    """
    cap = int(PART_SHARE * limit)
    if refused_tokens is not None:
        cap = min(cap, int(PART_SHARE * refused_tokens))
    return max(1, cap)
