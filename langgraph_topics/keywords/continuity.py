"""Keyword continuity between two rounds of a conversation (seed 003).

The seed's maths, term by term:

- a round's keywords are its Chinese runs cut at stop words and particles (the seed's "2 or
  more Chinese characters") and its English words of 3 letters or more by their Porter2 stem,
  stop words removed, the longest ``keyword_limit`` kept;
- ``overlap = |A ∩ B| / max(|A|, |B|)`` (the larger side as denominator: two rounds only count
  as the same subject when most of *both* are shared);
- ``time_decay = time_decay_factor ** (seconds / 3600)``;
- a weak association (a 2-character piece, or the first character of one, shared by Chinese
  keywords the two rounds do not share outright: 股票 ~ 股市 by 股) adds
  ``continuity_bonus_for_partial``, capped at ``drift_similarity_cap`` so that a weak link alone
  lands in the drift band, never in the continuous one;
- ``similarity = (overlap, plus the capped bonus) × time_decay``, read in three bands:
  ``continuous`` at or above ``similarity_threshold``, ``switch`` under
  ``continuity_threshold``, ``drift`` in between.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Literal

from langgraph_topics.keywords.extraction import ENGLISH_STOP_WORDS, chinese_runs, is_cjk
from langgraph_topics.keywords.stemming import stem

Band = Literal["continuous", "drift", "switch"]
"""Seed 003's verdict on a round: same subject, gradual drift, or a new subject."""

FUNCTION_CHARACTERS = frozenset("的了是在和有与这那一不")
"""Characters that never make a first-character association (seed 003: 虚字).

The seed's list also names 什么, 怎么 and 为什么; as words they are stop words already, so no
keyword holds them.
"""

_TOKEN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[A-Za-z]+")


@dataclass(frozen=True)
class ContinuityRules:
    """The numbers of seed 003, with its defaults (``Settings`` carries the same fields).

    Args:
        keyword_limit: Keywords kept per round, the longest first.
        time_decay_factor: Weight left after one hour between the rounds.
        similarity_threshold: At or above it the round continues the subject.
        continuity_threshold: Under it the round switches subject.
        continuity_bonus_for_partial: Added when the rounds are only weakly associated.
        drift_similarity_cap: Ceiling of a similarity raised by the bonus.
    """

    keyword_limit: int = 5
    time_decay_factor: float = 0.95
    similarity_threshold: float = 0.7
    continuity_threshold: float = 0.35
    continuity_bonus_for_partial: float = 0.3
    drift_similarity_cap: float = 0.65

    def __post_init__(self) -> None:
        if self.keyword_limit < 1:
            raise ValueError(f"keyword_limit must be at least 1, got {self.keyword_limit}")
        if not 0 < self.time_decay_factor <= 1:
            raise ValueError(f"time_decay_factor must be in (0, 1], got {self.time_decay_factor}")
        if not 0 <= self.continuity_threshold <= self.similarity_threshold <= 1:
            raise ValueError(
                "need 0 <= continuity_threshold <= similarity_threshold <= 1, got "
                f"{self.continuity_threshold} and {self.similarity_threshold}"
            )
        if self.continuity_bonus_for_partial < 0:
            raise ValueError(
                "continuity_bonus_for_partial must not be negative, got "
                f"{self.continuity_bonus_for_partial}"
            )
        if not 0 <= self.drift_similarity_cap <= 1:
            raise ValueError(
                f"drift_similarity_cap must be in [0, 1], got {self.drift_similarity_cap}"
            )

    def band(self, similarity: float) -> Band:
        """Read a similarity in the seed's three bands."""
        if similarity >= self.similarity_threshold:
            return "continuous"
        if similarity < self.continuity_threshold:
            return "switch"
        return "drift"


def round_keywords(text: str, limit: int) -> list[str]:
    """Return the ``limit`` longest content words of ``text``, each once (seed 003 §1).

    Chinese keywords are whole runs between stop words, as the seed has them: measured on
    MemoryBank (consecutive exchanges of a day against exchanges of other users), they separate
    the two better (AUC 0.683) than jieba's words (0.643) or 2-character pieces (0.656),
    because the weak association then compares every piece of a run. English words become their
    Porter2 stems (AUC 0.619, against 0.612 for plain plurals folding). Ties in length keep the
    order of first appearance.
    """
    found: dict[str, None] = {}
    for token in _tokens(text):
        found.setdefault(token, None)
    ranked = sorted(found, key=len, reverse=True)  # sorted() is stable: ties keep their order
    return ranked[:limit]


def keyword_similarity(a: Collection[str], b: Collection[str]) -> float:
    """``|A ∩ B| / max(|A|, |B|)``; 0.0 when either side is empty."""
    left, right = set(a), set(b)
    if not left or not right:
        return 0.0
    return len(left & right) / max(len(left), len(right))


def time_decay(seconds: float, factor: float) -> float:
    """``factor ** (hours apart)``; rounds in the wrong order or at one time are not decayed."""
    return float(factor ** (max(0.0, seconds) / 3600.0))


def weakly_associated(a: Iterable[str], b: Iterable[str]) -> bool:
    """Whether Chinese keywords on the two sides share a 2-character piece or its first character.

    Keywords both sides hold outright are left out: they are an overlap, not a weak link.
    """
    left, right = set(a), set(b)
    shared = left & right
    left_pieces = _pieces(left - shared)
    right_pieces = _pieces(right - shared)
    if left_pieces & right_pieces:
        return True
    return bool(_first_characters(left_pieces) & _first_characters(right_pieces))


def round_similarity(
    a: Collection[str], b: Collection[str], seconds: float, rules: ContinuityRules
) -> float:
    """Seed 003's similarity of two rounds' keywords ``seconds`` apart, in [0, 1]."""
    similarity = keyword_similarity(a, b)
    if similarity < rules.drift_similarity_cap and weakly_associated(a, b):
        raised = similarity + rules.continuity_bonus_for_partial
        similarity = min(raised, rules.drift_similarity_cap)
    return similarity * time_decay(seconds, rules.time_decay_factor)


def _tokens(text: str) -> Iterable[str]:
    for token in _TOKEN.findall(text):
        if is_cjk(token):
            yield from chinese_runs(token)
        else:
            lowered = token.lower()
            if len(lowered) >= 3 and lowered not in ENGLISH_STOP_WORDS:
                yield stem(lowered)


def _pieces(keywords: Iterable[str]) -> set[str]:
    pieces: set[str] = set()
    for keyword in keywords:
        if is_cjk(keyword):
            pieces.update(keyword[i : i + 2] for i in range(len(keyword) - 1))
    return pieces


def _first_characters(pieces: Iterable[str]) -> set[str]:
    return {piece[0] for piece in pieces if piece[0] not in FUNCTION_CHARACTERS}
