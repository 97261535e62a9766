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

SCOPE_MARK = "\x1f"
"""Opens and separates a user-scoped thread id (``scope/threads.py``): a control character,
which :func:`id_problem` refuses in every id a person or a client names, so that no plain
thread id ever equals a user's thread."""
_USER_KEY = re.compile(r"[A-Za-z0-9_-]{0,48}-[0-9a-f]{10}")
_UNSAFE_IN_DIRECTORY = re.compile(r"[^A-Za-z0-9_.-]")
_UNSAFE_IN_LABEL = re.compile(r"[^A-Za-z0-9_-]")
_READABLE_CHARS = 48
_DIGEST_CHARS = 10


# Every turn derives the thread's directory several times (locks, stores, the tuning log): a
# regular expression and a SHA-1 each time, for a handful of threads per process.
@lru_cache(maxsize=4096)
def thread_directory_name(thread_id: str) -> str:
    """A file-system-safe, collision-free directory name for a thread id.

    A user's thread is named ``@<user key>@<name of its thread id>``: a plain thread's name
    never holds ``@``, so every file of a user starts with the user's prefix
    (:func:`user_prefix`) and can be found by it.
    """
    parts = scoped_parts(thread_id)
    if parts is not None:
        return user_prefix(parts[0]) + thread_directory_name(parts[1])
    return _readable_name(thread_id, _UNSAFE_IN_DIRECTORY, thread_id.encode("utf-8"))


def thread_key(thread_id: str) -> str:
    """The namespace label of a thread: readable, collision-free, without ``.``.

    :func:`thread_directory_name` except that ``.`` becomes ``_``, since ``BaseStore``
    namespace labels cannot hold one, and that a lone surrogate is hashed rather than refused.
    """
    parts = scoped_parts(thread_id)
    if parts is not None:
        return user_prefix(parts[0]) + thread_key(parts[1])
    encoded = thread_id.encode("utf-8", "surrogatepass")
    return _readable_name(thread_id, _UNSAFE_IN_LABEL, encoded)


def user_prefix(user_key: str) -> str:
    """How every directory name and namespace label of a user's threads starts."""
    return f"@{user_key}@"


def _readable_name(thread_id: str, unsafe: re.Pattern[str], encoded: bytes) -> str:
    """The id's first characters with the ``unsafe`` ones as ``_``, then a hash of ``encoded``."""
    safe = unsafe.sub("_", thread_id)[:_READABLE_CHARS]
    return f"{safe}-{sha1(encoded).hexdigest()[:_DIGEST_CHARS]}"


def id_problem(thread_id: str) -> str | None:
    """Say what is wrong with a thread (or user) id, or None when it is fine."""
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


def scoped_parts(thread_id: str) -> tuple[str, str] | None:
    """``(user key, the user's thread id)`` of a user-scoped thread id, None for a plain one."""
    if not thread_id.startswith(SCOPE_MARK):
        return None
    user_key, mark, local = thread_id[1:].partition(SCOPE_MARK)
    if not mark or not _USER_KEY.fullmatch(user_key):
        return None
    return user_key, local


def check_thread_id(thread_id: object) -> str:
    """Return ``thread_id`` unchanged if it can name a thread.

    A user-scoped id (``scope.threads.scoped_thread_id``) is checked by its thread part.

    Raises:
        InputError: (a ``ValueError``) naming the id, repr'd, and what is wrong with it.
    """
    if not isinstance(thread_id, str):
        raise InputError(
            f"invalid thread id {thread_id!r:.80}: a string is needed, "
            f"not {type(thread_id).__name__}"
        )
    parts = scoped_parts(thread_id)
    problem = id_problem(thread_id if parts is None else parts[1])
    if problem is None:
        return thread_id
    shown = repr(thread_id) if len(thread_id) <= 80 else f"{thread_id[:60]!r}…"
    raise InputError(f"invalid thread id {shown}: {problem}")
