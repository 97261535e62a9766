"""Which strings may name a conversation thread, and the safe names derived from one.

A thread id becomes a checkpoint key, a directory name (:func:`thread_directory_name` maps it
to a safe one, so ``../x`` stays inside the data directory), a ``BaseStore`` namespace label
(:func:`thread_key`) and a Chroma collection name. Ids that could only come from a mistake
are refused before anything is written: the empty id (it used to fall through to
``default``), NUL and other control characters, lone surrogates (undecodable bytes on a
command line, which cannot be hashed into a directory name) and ids longer than
``MAX_THREAD_ID_LENGTH``.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from hashlib import sha1

from langgraph_topics.errors import InputError

MAX_THREAD_ID_LENGTH = 256
"""Longest thread id accepted, in characters."""

_UNSAFE_IN_DIRECTORY = re.compile(r"[^A-Za-z0-9_.-]")
_UNSAFE_IN_LABEL = re.compile(r"[^A-Za-z0-9_-]")
_READABLE_CHARS = 48
_DIGEST_CHARS = 10


# Every turn derives the thread's directory several times (locks, stores, the tuning log): a
# regular expression and a SHA-1 each time, for a handful of threads per process.
@lru_cache(maxsize=4096)
def thread_directory_name(thread_id: str) -> str:
    """A file-system-safe, collision-free directory name for a thread id."""
    return _readable_name(thread_id, _UNSAFE_IN_DIRECTORY, thread_id.encode("utf-8"))


def thread_key(thread_id: str) -> str:
    """The namespace label of a thread: readable, collision-free, without ``.``.

    :func:`thread_directory_name` except that ``.`` becomes ``_``, since ``BaseStore``
    namespace labels cannot hold one, and that a lone surrogate is hashed rather than refused.
    """
    encoded = thread_id.encode("utf-8", "surrogatepass")
    return _readable_name(thread_id, _UNSAFE_IN_LABEL, encoded)


def _readable_name(thread_id: str, unsafe: re.Pattern[str], encoded: bytes) -> str:
    """The id's first characters with the ``unsafe`` ones as ``_``, then a hash of ``encoded``."""
    safe = unsafe.sub("_", thread_id)[:_READABLE_CHARS]
    return f"{safe}-{sha1(encoded).hexdigest()[:_DIGEST_CHARS]}"


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
