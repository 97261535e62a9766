"""Topic names distinct within a thread, each saying what tells its topic apart.

Two topics called "CLI tool", or subtopics "refactor" and "refactor (2)", leave the user to open
both to know which is which. A name that another topic of the thread already holds is replaced
by a phrase of what this topic says and the other does not; subtopics are named against their
siblings and never after their parent's key word alone. When the words cannot tell them apart,
the date the topic began does ("refactor, 8 May 2023").
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime

from langgraph_topics.keywords.phrases import name_phrase
from langgraph_topics.roles.native.text import message_text
from langgraph_topics.state.records import StoredMessage, TopicRecord

USER_WEIGHT = 1.5
"""The user's words define a topic more than the assistant's, which restate and elaborate."""
_PROSE_ROLES = ("user", "assistant")


def phrase_of(
    messages: Sequence[StoredMessage],
    *,
    contrast: Sequence[str] = (),
    avoid: Collection[str] = (),
    taken: Collection[str] = (),
) -> str | None:
    """A short phrase naming ``messages``, or None when they name nothing.

    See :func:`~langgraph_topics.keywords.phrases.name_phrase`.

    Args:
        messages: The topic's messages, in order.
        contrast: Texts of the topics it is told apart from.
        avoid: Names whose words may not be the phrase's key word.
        taken: Names the phrase may not be.
    """
    prose = [m for m in messages if m["role"] in _PROSE_ROLES] or list(messages)
    texts = [message_text(m) for m in prose]
    weights = [USER_WEIGHT if m["role"] == "user" else 1.0 for m in prose]
    people = {m["name"] for m in messages if m.get("name")}
    return name_phrase(
        texts,
        weights,
        [m["role"] == "user" for m in prose],
        people=people,
        contrast=contrast,
        avoid=avoid,
        taken=taken,
    )


def distinct_name(
    name: str,
    messages: Sequence[StoredMessage],
    taken: Collection[str],
    *,
    contrast: Sequence[str] = (),
    avoid: Collection[str] = (),
) -> str:
    """``name`` when no name in ``taken`` is the same (without case), else one that differs.

    Args:
        name: The name the topic was given.
        messages: The topic's messages.
        taken: The names other topics of the thread hold.
        contrast: Texts of the topics holding ``name`` already (their briefs, their messages).
        avoid: Names whose words the new name should not rest on (``name`` always is one).
    """
    used = {other.casefold() for other in taken}
    if name.strip() and name.casefold() not in used:
        return name
    base = name.strip() or "Untitled topic"
    phrase = phrase_of(messages, contrast=contrast, avoid=[base, *avoid], taken=used)
    if phrase:
        return phrase
    for dated in _dated(base, messages):
        if dated.casefold() not in used:
            return dated
    # Same words, same minute: nothing tells these topics apart for a reader either.
    return base


def _dated(base: str, messages: Sequence[StoredMessage]) -> list[str]:
    """``base`` with the day the topic began, then with the minute too."""
    stamp = next((m.get("timestamp") for m in messages if m.get("timestamp")), None)
    try:
        began = datetime.fromisoformat(stamp) if stamp else None
    except ValueError:
        began = None
    if began is None:
        return []
    day = f"{began.day} {began:%b %Y}"
    return [f"{base}, {day}", f"{base}, {day} {began:%H:%M}"]


def thread_name(
    name: str,
    messages: Sequence[StoredMessage],
    registry: Mapping[str, TopicRecord],
    brief_of: Callable[[str], str],
    also_taken: Collection[str] = (),
) -> str:
    """A new topic's name, distinct from every name of the thread's registry and ``also_taken``.

    Args:
        name: The name its splitter or brief writer gave it.
        messages: Its messages.
        registry: The thread's topics.
        brief_of: A topic's brief by id: what the topics holding ``name`` are told apart by.
        also_taken: Names given in the same split, not registered yet.
    """
    taken = [record["name"] for record in registry.values()] + list(also_taken)
    wanted = name.casefold()
    if wanted not in {other.casefold() for other in taken}:
        return name
    contrast: list[str] = []
    for topic_id, record in registry.items():
        if record["name"].casefold() != wanted:
            continue
        try:
            contrast.append(brief_of(topic_id))
        except Exception:  # an archived or unreadable topic: its name still counts as taken
            continue
    return distinct_name(name, messages, taken, contrast=[text for text in contrast if text])
