"""Readers of public conversation data sets (LoCoMo)."""

from langgraph_topics.datasets.locomo import (
    LocomoConversation,
    LocomoQuestion,
    conversation_messages,
    load_locomo,
    normalise_evidence,
)

__all__ = [
    "LocomoConversation",
    "LocomoQuestion",
    "conversation_messages",
    "load_locomo",
    "normalise_evidence",
]
