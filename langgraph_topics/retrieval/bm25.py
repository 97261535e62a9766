"""Okapi BM25 (k1 = 1.5, b = 0.75, Lucene's non-negative idf).

Shared by the native topic window and the benchmark baselines.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

_WORD = re.compile(r"[^\W_]+")


def tokenize(text: str) -> list[str]:
    """Lower-cased letter/digit runs (no stemming, no stop list: idf discounts common words)."""
    return _WORD.findall(text.lower())


class BM25:
    """A BM25 index over tokenised documents.

    Args:
        documents: One token list per document.
        k1: Term-frequency saturation.
        b: Length normalisation.
    """

    def __init__(self, documents: Sequence[Sequence[str]], *, k1: float = 1.5, b: float = 0.75):
        self.k1 = k1
        self.b = b
        self.count = len(documents)
        lengths = np.array([len(d) for d in documents], dtype=np.float64)
        average = float(lengths.mean()) if self.count and lengths.sum() else 1.0
        self._norm = k1 * (1 - b + b * lengths / average)
        frequency = Counter(term for document in documents for term in set(document))
        # log(1 + …) keeps idf positive, so a term in most documents still counts a little.
        self.idf = {
            term: math.log(1 + (self.count - n + 0.5) / (n + 0.5)) for term, n in frequency.items()
        }
        self._postings: dict[str, list[tuple[int, int]]] = {}
        for index, document in enumerate(documents):
            for term, tf in Counter(document).items():
                self._postings.setdefault(term, []).append((index, tf))

    def scores(self, query: Sequence[str]) -> npt.NDArray[np.float64]:
        """The BM25 score of every document for the query tokens (repeats count again)."""
        out = np.zeros(self.count, dtype=np.float64)
        for term in query:
            idf = self.idf.get(term)
            if idf is None:
                continue
            for index, tf in self._postings[term]:
                out[index] += idf * tf * (self.k1 + 1) / (tf + self._norm[index])
        return out

    def order(self, query: Sequence[str]) -> list[int]:
        """Document indices by score, best first; ties (and zero scores) in document order."""
        return [int(i) for i in np.argsort(-self.scores(query), kind="stable")]
