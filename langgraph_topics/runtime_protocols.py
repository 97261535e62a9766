"""Runtime protocol checks of the per-turn path, answered once per class.

``isinstance`` against a ``runtime_checkable`` protocol gathers the protocol's members again on
every call (12–16 µs on Python 3.11), and every topic window of every turn asks the same
question of the same classes. The answer is kept per class: this package's implementations
define their members on the class, never on one instance only.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from langgraph_topics.roles.protocols import (
    EvidenceTopicWindow,
    IndexedBriefWriter,
    IndexedResponder,
    IndexedSplitter,
)
from langgraph_topics.stores.protocols import BranchedTopicStore, ViewedTopicStore

_answers: dict[tuple[type, Any], bool] = {}


def implements(value: object, protocol: Any) -> bool:
    """``isinstance(value, protocol)``, computed once per class of ``value``."""
    key = (type(value), protocol)
    found = _answers.get(key)
    if found is None:
        found = _answers[key] = isinstance(value, protocol)
    return found


def uses_evidence(window: object) -> TypeGuard[EvidenceTopicWindow]:
    """Whether a topic window takes the turn's precomputed evidence."""
    return implements(window, EvidenceTopicWindow)


def takes_vectors(responder: object) -> TypeGuard[IndexedResponder]:
    """Whether a responder takes the indexed vectors of the window's messages."""
    return implements(responder, IndexedResponder)


def takes_sentence_vectors(writer: object) -> TypeGuard[IndexedBriefWriter]:
    """Whether a brief writer takes the message index's vectors of whole-message sentences."""
    return implements(writer, IndexedBriefWriter)


def takes_brief_vectors(splitter: object) -> TypeGuard[IndexedSplitter]:
    """Whether a splitter takes the topic index's vectors of the briefs."""
    return implements(splitter, IndexedSplitter)


def is_branched(store: object) -> TypeGuard[BranchedTopicStore]:
    """Whether a topic store keeps branches (checkpoints name the records they see)."""
    return implements(store, BranchedTopicStore)


def has_views(store: object) -> TypeGuard[ViewedTopicStore]:
    """Whether a topic store hands out views of its topics instead of copies."""
    return implements(store, ViewedTopicStore)
