"""Match keys of keywords: Snowball (Porter2) stems for English words, Chinese words as they are.

Matching and naming want different forms of a word. Matching wants ``planning``, ``plans`` and
``planned`` to meet, which a real stemmer gives; naming wants the surface word, because a stem
such as ``alway`` or ``ourselv`` is not a word a person would write. So stems are only ever
compared, never shown: :func:`match_key` is what callers compare, the keyword itself is what
they print.
"""

from __future__ import annotations

import threading
from functools import lru_cache

import snowballstemmer

_STEMMER = snowballstemmer.stemmer("english")
# A Snowball stemmer keeps the word being stemmed in its own fields, and topic windows run in
# parallel threads: one lock around the (cached, so rare) calls is cheaper than a stemmer each.
_LOCK = threading.Lock()


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """Return the Porter2 stem of an English word, lower-cased (``planning`` → ``plan``)."""
    with _LOCK:
        return str(_STEMMER.stemWord(word.lower()))


def match_key(keyword: str) -> str:
    """Return what a keyword is compared by: the stem of a Latin word, anything else unchanged."""
    if keyword.isascii() and keyword.isalpha():
        return stem(keyword)
    return keyword
