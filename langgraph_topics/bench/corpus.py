"""A benchmark conversation as packable turns, and the token estimates that cost them."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langgraph_topics.datasets import LocomoConversation
from langgraph_topics.tokens import default_token_counter

TokenEstimate = Literal["chars4", "tokenizer"]
Cost = Callable[[str], float]
"""Maps a text to its (possibly fractional) token cost."""


@dataclass(frozen=True)
class Turn:
    """One conversation turn as the retrieval baselines see and pay for it."""

    id: str
    session: int
    text: str
    """``"speaker: text [shares a photo: caption]"``: what a baseline puts in the window."""


def chars_over_four(text: str) -> float:
    """The reference figures' estimate: characters / 4, unrounded."""
    return len(text) / 4


def token_cost(kind: TokenEstimate) -> Cost:
    """The token estimate named ``kind`` (``chars4`` or the bundled ``tokenizer``)."""
    if kind == "chars4":
        return chars_over_four
    counter = default_token_counter()
    return lambda text: float(counter(text))


def session_of(turn_id: str) -> int:
    """The session number of a LoCoMo turn id (``"D3:7"`` → 3; 0 when unreadable)."""
    head = turn_id.split(":", 1)[0].lstrip("D")
    return int(head) if head.isdigit() else 0


def locomo_turns(conversation: LocomoConversation) -> list[Turn]:
    """The turns of a conversation in order, rendered with the speaker's name.

    The speaker's name and the photo caption are part of what the reference baselines count:
    with them their published recall is reproduced within 0.02 (see ``benchmarks/README.md``).
    """
    return [_turn(message) for message in conversation.messages]


def _turn(message: dict[str, Any]) -> Turn:
    name = message.get("name")
    text = f"{name}: {message['content']}" if name else str(message["content"])
    return Turn(str(message["id"]), session_of(str(message["id"])), text)


def total_cost(turns: Sequence[Turn], cost: Cost) -> float:
    """What the whole history costs."""
    return math.fsum(cost(turn.text) for turn in turns)
