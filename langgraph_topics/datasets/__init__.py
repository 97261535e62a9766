"""Readers of public conversation data sets (LoCoMo, and MemoryBank converted to LoCoMo)."""

from langgraph_topics.datasets.locomo import (
    LocomoConversation,
    LocomoQuestion,
    conversation_messages,
    load_locomo,
    normalise_evidence,
)
from langgraph_topics.datasets.memorybank import memorybank_to_locomo

__all__ = [
    "LocomoConversation",
    "LocomoQuestion",
    "conversation_messages",
    "load_locomo",
    "memorybank_to_locomo",
    "normalise_evidence",
]
