"""Seed 003's keyword continuity: overlap, time decay, weak association, bonus, cap, bands."""

from __future__ import annotations

import pytest

from langgraph_topics.keywords.continuity import (
    ContinuityRules,
    keyword_similarity,
    round_keywords,
    round_similarity,
    time_decay,
    weakly_associated,
)
from langgraph_topics.settings import Settings

RULES = ContinuityRules()


def test_defaults_are_the_seeds() -> None:
    assert RULES == ContinuityRules(5, 0.95, 0.7, 0.35, 0.3, 0.65)
    assert Settings().continuity_rules() == RULES


def test_overlap_divides_by_the_larger_set() -> None:
    assert keyword_similarity({"a", "b"}, {"a", "b", "c", "d"}) == 0.5
    assert keyword_similarity({"a"}, {"a"}) == 1.0
    assert keyword_similarity(set(), {"a"}) == 0.0


def test_time_decay_is_the_factor_to_the_hours() -> None:
    assert time_decay(0, 0.95) == 1.0
    assert time_decay(3600, 0.95) == pytest.approx(0.95)
    assert time_decay(2 * 3600, 0.95) == pytest.approx(0.9025)
    assert time_decay(-60, 0.95) == 1.0  # out of order: not decayed


def test_stocks_and_stock_market_are_weakly_associated_by_their_first_character() -> None:
    assert weakly_associated(["股票"], ["股市"])
    assert round_similarity(["股票"], ["股市"], 0, RULES) == pytest.approx(0.3)
    assert round_similarity(["股票"], ["天气"], 0, RULES) == 0.0


def test_function_characters_make_no_association() -> None:
    assert not weakly_associated(["不同"], ["不好"])
    assert not weakly_associated(["这个"], ["这些"])


def test_a_shared_two_character_piece_is_a_weak_association() -> None:
    assert weakly_associated(["中东局势"], ["这些局势"])


def test_the_bonus_is_capped_so_a_weak_link_stays_in_the_drift_band() -> None:
    # 2 of 4 shared (0.5), plus a weak link: 0.8, capped at 0.65.
    a, b = ["中东", "战争", "股票", "影响"], ["中东", "战争", "股市", "基本面"]
    similarity = round_similarity(a, b, 0, RULES)
    assert similarity == pytest.approx(0.65)
    assert RULES.band(similarity) == "drift"
    assert round_similarity(a, a, 0, RULES) == 1.0  # no bonus over a full overlap


def test_the_three_bands_use_the_two_thresholds() -> None:
    assert RULES.band(0.7) == "continuous"
    assert RULES.band(0.69) == "drift"
    assert RULES.band(0.35) == "drift"
    assert RULES.band(0.34) == "switch"


def test_an_hour_apart_lowers_the_band() -> None:
    same = ["kyoto", "ryokan", "gion"]
    assert RULES.band(round_similarity(same, same, 0, RULES)) == "continuous"
    assert RULES.band(round_similarity(same, same, 24 * 3600, RULES)) == "switch"


def test_round_keywords_are_the_longest_content_words() -> None:
    # Stems, longest first, ties in the order said.
    assert round_keywords("I am planning trips to Kyoto", 5) == ["kyoto", "plan", "trip"]
    assert round_keywords("最近美股的估值是不是太高了？", 5) == ["美股", "估值", "太高"]
    assert len(round_keywords("alpha bravo charlie delta echoes foxtrot golf", 3)) == 3


def test_bad_numbers_are_refused_naming_them() -> None:
    with pytest.raises(ValueError, match="continuity_threshold"):
        Settings(continuity_threshold=0.8)
    with pytest.raises(ValueError, match="time_decay_factor"):
        Settings(time_decay_factor=0)
    with pytest.raises(ValueError, match="keyword_limit"):
        Settings(keyword_limit=0)
