"""Which strings may name a conversation thread.

A thread id becomes a checkpoint key, a directory name (``services.thread_directory_name``
maps it to a safe one, so ``../x`` stays inside the data directory) and a Chroma collection
name. Ids that could only come from a mistake are refused before anything is written: the
empty id (it used to fall through to ``default``), NUL and other control characters, lone
surrogates (undecodable bytes on a command line, which cannot be hashed into a directory
name) and ids longer than ``MAX_THREAD_ID_LENGTH``.
"""

from __future__ import annotations

import unicodedata

from langgraph_topics.errors import InputError

MAX_THREAD_ID_LENGTH = 256
"""Longest thread id accepted, in characters."""


def _problem(thread_id: str) -> str | None:
    """Say what is wrong with a thread id, or None when it is fine."""
    if not thread_id:
        return "it is empty"
    if len(thread_id) > MAX_THREAD_ID_LENGTH:
        return f"it has {len(thread_id)} characters, more than {MAX_THREAD_ID_LENGTH}"
    for position, character in enumerate(thread_id):
        category = unicodedata.category(character)
        if character == "\x00":
            return f"it contains a NUL character at position {position}"
        if category == "Cc":
            return (
                f"it contains the control character U+{ord(character):04X} at position {position}"
            )
        if category == "Cs":
            return f"it contains the lone surrogate U+{ord(character):04X} at position {position}"
    return None


def check_thread_id(thread_id: object) -> str:
    """Return ``thread_id`` unchanged if it can name a thread.

    Raises:
        InputError: (a ``ValueError``) naming the id, repr'd, and what is wrong with it.
    """
    if not isinstance(thread_id, str):
        raise InputError(
            f"invalid thread id {thread_id!r:.80}: a string is needed, "
            f"not {type(thread_id).__name__}"
        )
    problem = _problem(thread_id)
    if problem is None:
        return thread_id
    shown = repr(thread_id) if len(thread_id) <= 80 else f"{thread_id[:60]!r}…"
    raise InputError(f"invalid thread id {shown}: {problem}")
