"""Where a large topic is cut into subtopics (``subtopics.segments``) and how they are reached."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from langgraph_topics.activation.hierarchy import leaves, through_children
from langgraph_topics.cli.topic_tree import subtree_messages, tree_order
from langgraph_topics.settings import Settings
from langgraph_topics.state.records import StoredMessage, TopicRecord
from langgraph_topics.subtopics.limits import part_cap, topic_limit
from langgraph_topics.subtopics.segments import contiguous_parts, gap_similarities, plan_cuts


def _parts(cuts: list[int], count: int) -> list[range]:
    bounds = [0, *cuts, count]
    return [range(a, b) for a, b in zip(bounds, bounds[1:], strict=False)]


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 400), min_size=1, max_size=60),
    cap=st.integers(50, 1500),
    data=st.data(),
)
def test_every_part_stays_under_the_cap_unless_one_unit_alone_is_larger(
    sizes: list[int], cap: int, data: st.DataObject
) -> None:
    gaps = data.draw(st.lists(st.floats(-1, 1), min_size=len(sizes) - 1, max_size=len(sizes) - 1))
    cuts = plan_cuts(sizes, gaps, cap, cap // 4)
    assert cuts == sorted(set(cuts)) and all(0 < cut < len(sizes) for cut in cuts)
    for part in _parts(cuts, len(sizes)):
        tokens = sum(sizes[i] for i in part)
        assert tokens <= cap or len(part) == 1


def test_the_cut_falls_where_the_subject_changed() -> None:
    # Ten units of 100 tokens, a cap of 600: one cut is needed, and the gap between units 4 and
    # 5 is the only one where the conversation turned.
    gaps = [0.9, 0.9, 0.9, 0.9, 0.1, 0.9, 0.9, 0.9, 0.9]
    assert plan_cuts([100] * 10, gaps, 600, 150) == [5]
    # Everything fits: no cut, whatever the similarities say.
    assert plan_cuts([100] * 10, gaps, 1000, 250) == []


def test_gaps_are_low_between_two_subjects() -> None:
    first, second = np.eye(2, dtype=np.float32)
    vectors = np.vstack([first] * 4 + [second] * 4)
    gaps = gap_similarities(vectors)
    assert len(gaps) == 7
    assert int(np.argmin(gaps)) == 3  # between unit 3 and unit 4
    assert gaps[0] > 0.99 and gaps[3] < 0.01


def test_parts_keep_every_message_once_in_order() -> None:
    units: list[list[StoredMessage]] = [
        [
            {"id": f"u{n}", "role": "user", "content": "q"},
            {"id": f"a{n}", "role": "assistant", "content": "a"},
        ]
        for n in range(8)
    ]
    first, second = np.eye(2, dtype=np.float32)
    vectors = np.vstack([first] * 4 + [second] * 4)
    parts = contiguous_parts(units, vectors, [100] * 8, 500)
    assert [len(part) for part in parts] == [8, 8]
    flat = [m["id"] for part in parts for m in part]
    assert flat == [m["id"] for unit in units for m in unit]


def test_limits_follow_the_cheap_models_context_when_it_is_known(tmp_path: object) -> None:
    assert topic_limit(Settings(subtopic_limit_tokens=None)) is None
    assert topic_limit(Settings(subtopic_limit_tokens=6000)) == 6000
    assert topic_limit(Settings(cheap_context_tokens=128_000)) == 64_000
    assert part_cap(4000) == 2000
    # A provider refused the topic at 3,000 tokens: its parts start at half of that at most.
    assert part_cap(64_000, refused_tokens=3000) == 1500
    assert part_cap(None, refused_tokens=3000) == 1500


def _record(topic_id: str, status: str, children: list[str] | None = None) -> TopicRecord:
    record: TopicRecord = {
        "id": topic_id,
        "name": topic_id,
        "status": status,  # type: ignore[typeddict-item]
        "parent_id": None,
        "scores": [],
        "created_at": "2026-01-01T00:00:00+00:00",
        "last_active_at": "2026-01-01T00:00:00+00:00",
        "message_count": 0,
    }
    if children is not None:
        record["children"] = children
    return record


def test_a_hit_on_a_divided_topic_goes_to_its_subtopics() -> None:
    topics = {
        "p": _record("p", "split", ["c1", "c2"]),
        "c1": _record("c1", "dormant"),
        "c2": _record("c2", "split", ["g1"]),
        "g1": _record("g1", "dormant"),
        "x": _record("x", "dormant"),
    }
    assert leaves(topics, "p") == ["c1", "g1"]
    assert leaves(topics, "x") == ["x"]
    assert through_children([("p", 0.8), ("x", 0.5), ("c1", 0.9)], topics) == [
        ("c1", 0.9),
        ("g1", 0.8),
        ("x", 0.5),
    ]
    # A damaged registry (a cycle of children) never loops.
    looped = {"a": _record("a", "split", ["b"]), "b": _record("b", "split", ["a"])}
    assert leaves(looped, "a") == []


def test_the_topics_table_is_a_tree_with_subtree_counts() -> None:
    rows = [
        {"id": "p", "parent_id": None, "message_count": 0},
        {"id": "other", "parent_id": None, "message_count": 4},
        {"id": "c1", "parent_id": "p", "message_count": 30},
        {"id": "c2", "parent_id": "p", "message_count": 0},
        {"id": "g1", "parent_id": "c2", "message_count": 12},
        {"id": "loop", "parent_id": "loop", "message_count": 1},
    ]
    assert [(depth, row["id"]) for depth, row in tree_order(rows)] == [
        (0, "p"),
        (1, "c1"),
        (1, "c2"),
        (2, "g1"),
        (0, "other"),
        (0, "loop"),
    ]
    assert subtree_messages(rows) == {"p": 42, "other": 4, "c1": 30, "c2": 12, "g1": 12, "loop": 1}


def test_subtopics_share_their_roots_evidence_prior() -> None:
    from langgraph_topics.bench.fakes import HashEmbedder
    from langgraph_topics.retrieval.evidence import EvidenceScorer
    from langgraph_topics.retrieval.message_index import MessageIndex
    from langgraph_topics.subtopics.families import prior_families

    embedder = HashEmbedder()
    texts = ["the ryokan near Gion", "an onsen bath", "Fushimi Inari at dawn", "temple lanes"]
    texts += ["stock dividends", "P/E ratio of a value stock"]
    messages: list[StoredMessage] = [
        {"id": f"m{n}", "role": "user", "content": text} for n, text in enumerate(texts)
    ]
    whole, divided = MessageIndex(None, embedder), MessageIndex(None, embedder)
    whole.add(messages, ["trip"] * 4 + ["stocks"] * 2)
    divided.add(messages, ["hotels", "hotels", "temples", "temples", "stocks", "stocks"])
    registry = {
        "trip": _record("trip", "split", ["hotels", "temples"]),
        "hotels": {**_record("hotels", "active"), "parent_id": "trip"},
        "temples": {**_record("temples", "active"), "parent_id": "trip"},
        "stocks": _record("stocks", "active"),
    }
    families = prior_families(registry)
    assert families == {"hotels": "trip", "temples": "trip"}
    query = "Which ryokan near Gion had the onsen?"
    before = EvidenceScorer(embedder).score(whole, query, [])
    after = EvidenceScorer(embedder).score(divided, query, [], families)
    alone = EvidenceScorer(embedder).score(divided, query, [])
    # An undivided topic's messages are worth what they were.
    assert np.allclose(before.score[4:], after.score[4:])
    # The temples hold none of the best messages: alone they lose the trip's prior; with
    # their family they keep half of what they would lose.
    assert np.all(alone.score[2:4] < after.score[2:4])
    assert np.allclose(after.score[2:4], (alone.score[2:4] + before.score[2:4]) / 2)
