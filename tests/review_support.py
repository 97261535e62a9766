"""A conversation with duplicate topics, for the review tests (``test_review*.py``).

:class:`BlockSplitter` files each message by the block its id names (``kyotoA-003`` goes to
``kyotoA``'s topic), so that two blocks on one subject make two topics: the duplicates a
review must merge. Everything else runs on the native back ends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from conversations import SUBJECTS

from langgraph_topics.roles.protocols import SplitAssignment, SplitPlan, TopicInfo
from langgraph_topics.state.records import StoredMessage

KYOTO_AGAIN = [
    (
        "Back to the Kyoto trip in April: is Gion a good neighbourhood to stay in?",
        "Gion is central and walkable; a ryokan near Gion puts you close to the temples.",
    ),
    (
        "For Fushimi Inari shrine, should we go early in the morning?",
        "Yes, early morning at Fushimi Inari is quiet; sunset is busier.",
    ),
    (
        "Is a JR pass worth it for day trips from Kyoto to Nara and Osaka?",
        "For Nara and Osaka day trips a regional Kansai pass is cheaper than the JR pass.",
    ),
    (
        "Can you suggest a ryokan in Kyoto near Gion under 30,000 yen?",
        "Several small ryokan near Gion stay under 30,000 yen a night with breakfast.",
    ),
]
"""The Kyoto trip again, months later and in other words: a duplicate of the first one."""

GARDEN = [
    (
        "My tomato plants have yellow leaves at the bottom. Why?",
        "Lower yellow leaves on tomatoes often mean nitrogen deficiency or overwatering.",
    ),
    (
        "How often should I water tomatoes in pots?",
        "Water potted tomatoes when the top inch of soil is dry, often daily in summer.",
    ),
    (
        "Should I prune the suckers on my tomato plants?",
        "Pruning suckers on indeterminate tomatoes improves airflow and fruit size.",
    ),
    (
        "When is the best time to harvest tomatoes?",
        "Harvest tomatoes when fully coloured and slightly soft to the touch.",
    ),
]

BLOCKS: list[tuple[str, list[tuple[str, str]], str]] = [
    ("kyotoA", SUBJECTS["kyoto"], "2024-01"),
    ("stocks", SUBJECTS["stocks"], "2024-02"),
    ("kyotoB", KYOTO_AGAIN, "2024-03"),
    ("sourdough", SUBJECTS["sourdough"], "2024-04"),
    ("fitness", SUBJECTS["fitness"], "2024-05"),
    ("garden", GARDEN, "2024-06"),
]
"""Six blocks a month apart; ``kyotoA`` and ``kyotoB`` are one subject."""


def block_records() -> list[dict[str, Any]]:
    """Import records of :data:`BLOCKS`, ids ``<block>-<n>``, one day per exchange."""
    records: list[dict[str, Any]] = []
    for block, exchanges, month in BLOCKS:
        for turn, (question, answer) in enumerate(exchanges):
            stamp = f"{month}-1{turn}T10:00:00"
            for role, text in (("user", question), ("assistant", answer)):
                records.append(
                    {
                        "id": f"{block}-{len(records):03d}",
                        "role": role,
                        "content": text,
                        "timestamp": stamp,
                    }
                )
    return records


def block_of(message_id: str) -> str:
    """The block a message id names."""
    return message_id.split("-", 1)[0]


@dataclass
class BlockSplitter:
    """Splits by block: a block's messages go to the topic holding its first message.

    ``locate`` finds a stored message's topic (the memory's topic store, set once the memory
    exists); a block whose first message is not stored yet gets a new topic.
    """

    locate: Callable[[str], str | None] = lambda message_id: None
    first_ids: dict[str, str] = field(default_factory=dict)

    def split(
        self, units: Sequence[Sequence[StoredMessage]], topics: Sequence[TopicInfo]
    ) -> SplitPlan:
        known = {topic["id"] for topic in topics}
        assignments: list[SplitAssignment] = []
        new: dict[str, None] = {}
        for unit in units:
            block = block_of(unit[0]["id"])
            first = self.first_ids.setdefault(block, unit[0]["id"])
            topic_id = self.locate(first)
            ids = [message["id"] for message in unit]
            if topic_id in known:
                assignments.append({"message_ids": ids, "topic_id": topic_id, "new_key": None})
            else:
                new.setdefault(block)
                assignments.append({"message_ids": ids, "topic_id": None, "new_key": block})
        return {
            "assignments": assignments,
            "new_topics": [{"key": block, "name": block, "brief": ""} for block in new],
        }
