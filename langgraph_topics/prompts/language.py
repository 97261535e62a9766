"""Pick the prompt language from the conversation itself."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache


def detect_language(texts: Iterable[str], preference: str = "auto") -> str:
    """``zh`` when a fifth or more of the letters are CJK, else ``en``; a set preference wins."""
    if preference in ("zh", "en"):
        return preference
    cjk = other = 0
    for text in texts:
        text_cjk, text_other = _letters(text)
        cjk += text_cjk
        other += text_other
    return "zh" if cjk and cjk * 4 >= other else "en"


@lru_cache(maxsize=4096)
def _letters(text: str) -> tuple[int, int]:
    """CJK and other letters of one text; every node of a turn asks about the same messages."""
    cjk = other = 0
    for char in text:
        if "\u4e00" <= char <= "\u9fff" or "\u3400" <= char <= "\u4dbf":
            cjk += 1
        elif char.isalpha():
            other += 1
    return cjk, other
