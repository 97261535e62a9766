"""The unsplit messages as every topic window of one fan-out reads them, worked out once.

Each of a turn's topic windows worked out the same things from the unsplit list the fan-out
hands them all: the prompt language, the window's view of the list (large tool results as
references, ``windowed_messages``) and the set of its ids. They are kept per list handed out
(``state/fan_out_memo``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langgraph_topics.namespace.policy import NamespacePolicy
from langgraph_topics.namespace.window import windowed_messages
from langgraph_topics.prompts.language import detect_language
from langgraph_topics.settings import Settings
from langgraph_topics.state.fan_out_memo import FanOutMemo
from langgraph_topics.state.records import StoredMessage

LANGUAGE_SAMPLE = 10
"""The newest messages the language is detected from."""


@dataclass(frozen=True)
class ShownUnsplit:
    """What every topic window of a fan-out reads alike from its unsplit messages."""

    language: str
    policy: NamespacePolicy
    shown: tuple[StoredMessage, ...]
    """The messages as the window shows them (shared records: copy into a list to hand out)."""
    ids: frozenset[str]


MEMO: FanOutMemo[ShownUnsplit] = FanOutMemo()


def shown_unsplit(unsplit: Sequence[StoredMessage], settings: Settings) -> ShownUnsplit:
    """The language, window view and ids of ``unsplit`` under ``settings``, shared by a turn."""
    return MEMO.get(unsplit, (settings,), None, lambda records: _worked_out(records, settings))


def _worked_out(records: tuple[StoredMessage, ...], settings: Settings) -> ShownUnsplit:
    language = detect_language(
        (m["content"] for m in records[-LANGUAGE_SAMPLE:]), settings.language
    )
    policy = NamespacePolicy.of(settings)
    shown = windowed_messages(
        records,
        policy,
        language,
        settings.prompt_dir,
        preview_chars=settings.namespace_preview_chars,
    )
    return ShownUnsplit(language, policy, tuple(shown), frozenset(m["id"] for m in records))
