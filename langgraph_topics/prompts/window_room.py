"""The room a block placed after the assembly takes out of the main window's budget.

The responder's searches (``retrieval/search_window.py``) and the user's other threads
(``scope/window.py``) each add a block after the topic blocks: the assembly is told to leave
their share free before it fills the window.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from langgraph_topics.prompts.main_window import render_system_prompt
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.state.working_set import recent_messages
from langgraph_topics.tokens import TokenCounter
from langgraph_topics.tokens.counting import message_tokens


def reserved_room(
    working: Sequence[StoredMessage],
    *,
    keep_recent: int,
    budget: int,
    counter: TokenCounter,
    language: str,
    prompt_dir: Path | None,
    share: float,
    floor: float,
) -> int:
    """Tokens the assembly leaves free for a block placed after it.

    That is ``share`` of what the instructions and the recent messages leave of ``budget``,
    and at least ``floor`` of what the instructions leave.
    Recent messages past the budget are shortened to fit it (never dropped): the floor keeps
    the block some room all the same, or one long message would leave it none.
    """
    fixed = counter(render_system_prompt([], language, prompt_dir))
    recent = recent_messages(working, keep_recent)
    room = budget - fixed - sum(message_tokens(m, counter) for m in recent)
    return max(int(max(0, room) * share), int(max(0, budget - fixed) * floor))
