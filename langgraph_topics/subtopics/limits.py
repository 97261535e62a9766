"""When a topic is too large for its window, and how large its subtopics may be (§4.5)."""

from __future__ import annotations

from langgraph_topics.settings import Settings

PART_SHARE = 0.5
"""A subtopic starts at most at this share of the limit, so that it has room to grow before
it is divided in turn."""


def topic_limit(settings: Settings) -> int | None:
    """The tokens past which a topic is divided into subtopics; None: no size limit.

    ``topic_window_share`` of the cheap model's context when ``cheap_context_tokens`` says how
    large it is; the native size limit ``subtopic_limit_tokens`` otherwise (4,000 by default).
    """
    if settings.cheap_context_tokens:
        return max(1, int(settings.topic_window_share * settings.cheap_context_tokens))
    return settings.subtopic_limit_tokens


def part_cap(limit: int | None, refused_tokens: int | None = None) -> int:
    """The most tokens one subtopic of a divided topic starts with.

    Args:
        limit: The topic limit (:func:`topic_limit`), if there is one.
        refused_tokens: The size of the topic when its window's prompt was refused as too long
            (a provider 400): the parts then start at half of it at most, whatever the limit.

    Raises:
        ValueError: Neither a limit nor a refused size to derive the cap from.
    """
    bounds = [int(PART_SHARE * size) for size in (limit, refused_tokens) if size is not None]
    if not bounds:
        raise ValueError("a subtopic cap needs a topic limit or a refused size")
    return max(1, min(bounds))
