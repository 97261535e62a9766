"""How specific a word is: the rarer in general use, the better it names a subject.

"been", "time" or 感觉 occur in every conversation; "sourdough", "Kyoto" or 番茄炒蛋 say what
this one is about. A word's specificity is ``7 - zipf`` (its Zipf frequency: log10 of its
occurrences per billion words), between 0.5 and 5. English frequencies come from ``wordfreq``;
Chinese ones from jieba's own dictionary, which is loaded already for segmentation.
"""

from __future__ import annotations

import math
from functools import lru_cache

from langgraph_topics.keywords.extraction import is_cjk
from langgraph_topics.keywords.segmentation import word_frequency

_CEILING = 7.0
_LOWEST = 0.5
_HIGHEST = 5.0


@lru_cache(maxsize=65_536)
def specificity(word: str) -> float:
    """Return ``7 - zipf`` of ``word``, clamped to [0.5, 5]; unknown words are the most specific."""
    if is_cjk(word):
        share = word_frequency(word)
        zipf = math.log10(share * 1e9) if share > 0 else 0.0
    else:
        from wordfreq import zipf_frequency  # about 0.4 s to import: only when naming

        zipf = float(zipf_frequency(word.lower(), "en"))
    return min(_HIGHEST, max(_LOWEST, _CEILING - zipf))
