"""Pick the prompt language from the conversation itself."""

from __future__ import annotations

from collections.abc import Iterable


def detect_language(texts: Iterable[str], preference: str = "auto") -> str:
    """``zh`` when a fifth or more of the letters are CJK, else ``en``; a set preference wins."""
    if preference in ("zh", "en"):
        return preference
    cjk = other = 0
    for text in texts:
        for char in text:
            if "\u4e00" <= char <= "\u9fff" or "\u3400" <= char <= "\u4dbf":
                cjk += 1
            elif char.isalpha():
                other += 1
    return "zh" if cjk and cjk * 4 >= other else "en"
