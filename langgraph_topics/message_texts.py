"""Check a message text before anything is written: UTF-8 must be able to store it.

A text from a command-line argument holds the bytes that were not UTF-8 as lone surrogates
(Python's ``surrogateescape``), and an API caller can pass one directly; the checkpoint and
the topic files would refuse it half-way through a turn. The error names the first bad
character, so the input can be fixed.
"""

from __future__ import annotations

from langgraph_topics.errors import InputError

ESCAPED_BYTES = range(0xDC80, 0xDD00)
"""Lone surrogates standing for bytes that were not UTF-8 (``surrogateescape``)."""


def text_problem(text: str) -> str | None:
    """What keeps ``text`` from being stored as UTF-8 (its first bad character), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        code = ord(text[error.start])
        if code in ESCAPED_BYTES:
            return f"not valid UTF-8: byte 0x{code - 0xDC00:02x} at character {error.start}"
        return f"lone surrogate U+{code:04X} at character {error.start} (not storable as UTF-8)"
    return None


def check_message_text(text: object, what: str = "text") -> str:
    """``text`` if it is a string UTF-8 can store.

    Raises:
        InputError: One line naming ``what`` and the first bad character.
    """
    if not isinstance(text, str):
        raise InputError(f"{what} must be a string, not {type(text).__name__}")
    problem = text_problem(text)
    if problem:
        raise InputError(f"{what}: {problem}; nothing was written")
    return text
