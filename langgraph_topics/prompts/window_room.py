"""The room a block placed after the assembly takes out of the main window's budget.

The responder's searches (``retrieval/search_window.py``) and the user's other threads
(``scope/window.py``) each add a block after the topic blocks: the assembly is told to leave
their share free before it fills the window.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from langgraph_topics.prompts.main_window import render_system_prompt
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.state.working_set import recent_messages
from langgraph_topics.tokens import TokenCounter
from langgraph_topics.tokens.counting import message_tokens


class BlockAfterAssembly:
    """A block appended after the assembly, which asks it to leave the block's room free.

    A subclass (a dataclass holding ``language``, ``prompt_dir`` and ``counter``) names its
    shares and says whether it has anything to show this turn.
    """

    ROOM_SHARE: ClassVar[float]
    """Share of what the instructions and the recent messages leave of the budget."""
    ROOM_FLOOR: ClassVar[float]
    """Share of what the instructions leave, kept however long the recent messages are."""
    language: str
    prompt_dir: Path | None
    counter: TokenCounter

    def has_block(self) -> bool:
        """Whether the block shows anything this turn (nothing reserved otherwise)."""
        raise NotImplementedError

    def reserve(self, working: Sequence[StoredMessage], *, keep_recent: int, budget: int) -> int:
        """Tokens the assembly leaves free for the block (0 when it has nothing to show).

        Recent messages past the budget are shortened to fit it (never dropped): the floor
        keeps the block some room all the same, or one long message would leave it none.
        """
        if not self.has_block():
            return 0
        fixed = self.counter(render_system_prompt([], self.language, self.prompt_dir))
        recent = recent_messages(working, keep_recent)
        room = budget - fixed - sum(message_tokens(m, self.counter) for m in recent)
        return max(
            int(max(0, room) * self.ROOM_SHARE), int(max(0, budget - fixed) * self.ROOM_FLOOR)
        )
