"""How well a partition of messages matches their true sources: V-measure and B³.

Both compare a predicted partition (message id → topic) with a true one (message id → the
source the message came from). Every message of the truth must be in the prediction.

- **Homogeneity** (Rosenberg & Hirschberg, EMNLP 2007): ``I(C; K) / H(C)``, 1 when every
  topic holds one source only; **completeness**: ``I(C; K) / H(K)``, 1 when every source sits
  in one topic; **V-measure** their harmonic mean. With one source (``H(C) = 0``)
  homogeneity is 1, with one topic completeness is 1, as scikit-learn has it.
- **B³** (Bagga & Baldwin 1998; Amigó et al. 2009): per message, the share of its topic that
  shares its source (precision) and the share of its source that shares its topic (recall),
  each averaged over the messages; F1 their harmonic mean. Unlike V-measure it weighs each
  message alike, so one large mixed topic costs what its messages lose.

scikit-learn is not a dependency; these are the textbook sums over the contingency table
(``tests/test_partition_scores.py`` checks them against hand-computed values).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class PartitionScores:
    """A predicted partition against the truth; every figure in [0, 1], 1 best."""

    homogeneity: float
    completeness: float
    v_measure: float
    b3_precision: float
    b3_recall: float
    b3_f1: float

    def rounded(self, digits: int = 4) -> dict[str, float]:
        """The figures as a report stores them."""
        return {
            "homogeneity": round(self.homogeneity, digits),
            "completeness": round(self.completeness, digits),
            "v_measure": round(self.v_measure, digits),
            "b3_precision": round(self.b3_precision, digits),
            "b3_recall": round(self.b3_recall, digits),
            "b3_f1": round(self.b3_f1, digits),
        }


def _harmonic(a: float, b: float) -> float:
    return 2 * a * b / (a + b) if a + b else 0.0


def _unit(value: float) -> float:
    return min(1.0, max(0.0, value))


def _entropy(sizes: Iterable[int], total: int) -> float:
    return -sum(n / total * math.log(n / total) for n in sizes if n)


def score_partition(truth: Mapping[str, str], predicted: Mapping[str, str]) -> PartitionScores:
    """Homogeneity, completeness, V-measure and B³ of ``predicted`` against ``truth``.

    Raises:
        ValueError: No messages, or a message of the truth that the prediction lacks.
    """
    if not truth:
        raise ValueError("no messages to score")
    missing = [m for m in truth if m not in predicted]
    if missing:
        raise ValueError(f"{len(missing)} messages have no predicted topic, e.g. {missing[0]}")
    total = len(truth)
    cells = Counter((truth[m], predicted[m]) for m in truth)
    sources = Counter(truth.values())
    topics = Counter(predicted[m] for m in truth)
    mutual = sum(
        n / total * math.log(n * total / (sources[source] * topics[topic]))
        for (source, topic), n in cells.items()
    )
    source_entropy, topic_entropy = (
        _entropy(sources.values(), total),
        _entropy(topics.values(), total),
    )
    # Clamped: the sums of logarithms can land a rounding error outside [0, 1].
    homogeneity = _unit(mutual / source_entropy) if source_entropy else 1.0
    completeness = _unit(mutual / topic_entropy) if topic_entropy else 1.0
    # Σ over messages of |topic ∩ source| / |topic| is Σ over cells of n² / |topic|.
    precision = sum(n * n / topics[topic] for (_, topic), n in cells.items()) / total
    recall = sum(n * n / sources[source] for (source, _), n in cells.items()) / total
    return PartitionScores(
        homogeneity=homogeneity,
        completeness=completeness,
        v_measure=_harmonic(homogeneity, completeness),
        b3_precision=precision,
        b3_recall=recall,
        b3_f1=_harmonic(precision, recall),
    )
