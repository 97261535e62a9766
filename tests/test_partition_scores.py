"""V-measure and B³ (``bench/partition_scores.py``) against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from langgraph_topics.bench.partition_scores import score_partition

# Six messages from two sources; three topics, the middle one mixed.
TRUTH = {"a": "X", "b": "X", "c": "X", "d": "X", "e": "Y", "f": "Y"}
PREDICTED = {"a": "1", "b": "1", "c": "2", "d": "2", "e": "2", "f": "3"}


def test_a_mixed_partition_scores_as_worked_out_by_hand() -> None:
    scores = score_partition(TRUTH, PREDICTED)
    # B³ precision per message: a 2/2, b 2/2, c 2/3, d 2/3, e 1/3, f 1/1 → 14/3 over 6.
    assert scores.b3_precision == pytest.approx(7 / 9)
    # B³ recall per message: a-d 2/4 each, e 1/2, f 1/2 → 3 over 6.
    assert scores.b3_recall == pytest.approx(1 / 2)
    assert scores.b3_f1 == pytest.approx(14 / 23)
    # H(C|K): only topic 2 (2 X, 1 Y; weight 1/2) is mixed, and H(2/3, 1/3) is H(C) itself.
    assert scores.homogeneity == pytest.approx(1 / 2)
    # H(K|C) = ln 2 (X halves over topics 1 and 2, Y over 2 and 3); H(K) = H(1/3, 1/2, 1/6).
    topic_entropy = math.log(3) / 3 + math.log(2) / 2 + math.log(6) / 6
    completeness = 1 - math.log(2) / topic_entropy
    assert scores.completeness == pytest.approx(completeness)
    assert scores.v_measure == pytest.approx(2 * 0.5 * completeness / (0.5 + completeness))
    assert scores.v_measure == pytest.approx(0.38625, abs=1e-5)


def test_the_perfect_partition_scores_one_whatever_its_topic_names() -> None:
    renamed = {m: f"topic-{source}" for m, source in TRUTH.items()}
    assert set(score_partition(TRUTH, renamed).rounded().values()) == {1.0}


def test_one_topic_for_everything_is_complete_but_not_homogeneous() -> None:
    scores = score_partition(TRUTH, dict.fromkeys(TRUTH, "all"))
    assert (scores.homogeneity, scores.completeness) == (0.0, 1.0)
    assert scores.b3_recall == 1.0
    assert scores.b3_precision == pytest.approx((4 * 4 + 2 * 2) / 36)


def test_one_topic_per_message_is_homogeneous_and_b3_precise() -> None:
    scores = score_partition(TRUTH, {m: m for m in TRUTH})
    assert scores.homogeneity == 1.0 and scores.b3_precision == 1.0
    assert scores.b3_recall == pytest.approx((4 * (1 / 4) + 2 * (1 / 2)) / 6)
    # H(K|C) = 4/6 ln 4 + 2/6 ln 2 over H(K) = ln 6.
    expected = 1 - (4 / 6 * math.log(4) + 2 / 6 * math.log(2)) / math.log(6)
    assert scores.completeness == pytest.approx(expected)


def test_one_source_makes_any_partition_homogeneous() -> None:
    truth = dict.fromkeys("abc", "X")
    scores = score_partition(truth, {"a": "1", "b": "2", "c": "2"})
    assert scores.homogeneity == 1.0 and scores.b3_precision == 1.0


def test_a_message_without_a_predicted_topic_is_refused() -> None:
    with pytest.raises(ValueError, match="no predicted topic"):
        score_partition(TRUTH, {"a": "1"})
    with pytest.raises(ValueError, match="no messages"):
        score_partition({}, {})
