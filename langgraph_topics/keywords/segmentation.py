"""Chinese word segmentation with jieba, loaded on first use and silenced.

jieba ships its dictionary, so it works offline; building its prefix dictionary takes about a
second the first time (it caches it in the temporary directory afterwards), which is why it is
only loaded when a Chinese text is first segmented, never at import.
"""

from __future__ import annotations

import logging
import threading
from functools import lru_cache
from typing import Any

_LOCK = threading.Lock()
_tokenizer: Any = None


def _jieba() -> Any:
    global _tokenizer
    with _LOCK:
        if _tokenizer is None:
            import jieba

            jieba.setLogLevel(logging.WARNING)
            tokenizer = jieba.Tokenizer()
            tokenizer.initialize()
            _tokenizer = tokenizer
        return _tokenizer


@lru_cache(maxsize=16_384)
def chinese_words(run: str) -> tuple[str, ...]:
    """Return the words of a run of Chinese text, in order (``股票基本面`` → ``股票``, ``基本面``).

    Args:
        run: Chinese text; punctuation and Latin letters come back as their own tokens.
    """
    return tuple(word for word in _jieba().lcut(run, HMM=True) if word.strip())


def word_frequency(word: str) -> float:
    """Share of ``word`` among all words of jieba's dictionary (0.0 for a word it lacks)."""
    tokenizer = _jieba()
    return float(tokenizer.FREQ.get(word, 0)) / float(tokenizer.total or 1)
