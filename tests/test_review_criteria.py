"""What the review decides: which topics it archives, which it merges (pure functions)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from conversations import SUBJECTS
from review_support import KYOTO_AGAIN

from langgraph_topics.review.clock import parse_now
from langgraph_topics.review.criteria import TierGuard, archive_reason
from langgraph_topics.review.duplicates import (
    TopicProfile,
    merge_pairs,
    profile_text,
    topic_keywords,
)
from langgraph_topics.roles.protocols import Roles
from langgraph_topics.settings import Settings
from langgraph_topics.state.records import StoredMessage, TopicRecord
from langgraph_topics.stores.embeddings import UseEmbedder

NOW = datetime(2030, 1, 1, tzinfo=UTC)


def record(days_idle: float, status: str = "dormant") -> TopicRecord:
    return {
        "id": "topic-1",
        "name": "t",
        "status": status,  # type: ignore[typeddict-item]
        "parent_id": None,
        "scores": [],
        "created_at": "2024-01-01T00:00:00+00:00",
        "last_active_at": (NOW - timedelta(days=days_idle)).isoformat(),
        "message_count": 2,
    }


def exchange(count: int) -> list[StoredMessage]:
    roles = ["user", "assistant"]
    return [{"id": f"m{i}", "role": roles[i % 2], "content": "x"} for i in range(count)]  # type: ignore[misc]


def test_dormant_past_the_threshold_is_archived_whatever_its_last_status() -> None:
    settings = Settings()
    assert archive_reason(record(8), None, NOW, settings) == "dormant 8 days (over 7)"
    assert archive_reason(record(8, "active"), None, NOW, settings) is not None
    assert archive_reason(record(6.9), None, NOW, settings) is None
    assert archive_reason(record(400, "archived"), None, NOW, settings) is None
    assert archive_reason(record(8), None, NOW, Settings(archive_after_days=30)) is None


def test_a_one_off_question_goes_after_a_day_a_discussion_does_not() -> None:
    settings = Settings()
    assert (
        archive_reason(record(2), exchange(2), NOW, settings) == "one-off question, idle 2.0 days"
    )
    assert archive_reason(record(0.5), exchange(2), NOW, settings) is None
    two_questions: list[StoredMessage] = [
        {"id": "a", "role": "user", "content": "x"},
        {"id": "b", "role": "user", "content": "y"},
    ]
    assert archive_reason(record(2), two_questions, NOW, settings) is None
    assert archive_reason(record(2), None, NOW, settings) is None  # too large to be one


def test_low_importance_archives_a_dormant_topic_the_idle_rule_keeps() -> None:
    patient = Settings(archive_after_days=365)
    assert archive_reason(record(200), None, NOW, patient) == (
        "low importance: memory score 0.148 (archive tier)"
    )
    assert archive_reason(record(100), None, NOW, patient) is None  # memory-only tier yet
    assert archive_reason(record(200, "active"), None, NOW, patient) is None  # still in use


def test_the_tier_guard_keeps_pinned_and_core_topics() -> None:
    guard = TierGuard(decay_days=90)
    assert guard.keeps(record(30), NOW) is None
    assert guard.keeps({**record(30), "usage": {"pinned": True}}, NOW) == "pinned"
    used: TopicRecord = {
        **record(1, "active"),
        "message_count": 20,
        "usage": {"recalled": 12, "searched": 30, "rating": 5, "referenced": 40},
    }
    assert (guard.keeps(used, NOW) or "").startswith("core tier")


def test_now_takes_dates_and_times_and_names_what_it_refuses() -> None:
    assert parse_now("2030-01-01") == NOW
    assert parse_now("2030-01-01T08:00:00+08:00") == NOW
    with pytest.raises(ValueError, match="--now 'soon'"):
        parse_now("soon")


def profile(
    topic_id: str, vector: list[float], keywords: set[str], **extra: object
) -> TopicProfile:
    values: dict[str, object] = {"parent_id": None, "rank": int(topic_id[-1])}
    values.update(extra)
    return TopicProfile(
        topic_id=topic_id,
        keywords=frozenset(keywords),
        vector=vector,
        **values,  # type: ignore[arg-type]
    )


def test_both_signals_must_agree_and_only_childless_siblings_merge() -> None:
    settings = Settings()
    same = [1.0, 0.0]
    words = {"kyoto", "gion", "ryokan"}
    pairs = merge_pairs(
        [profile("t2", same, words), profile("t1", same, words)], {"t1": None, "t2": None}, settings
    )
    assert [(p.keep, p.retire, p.shared) for p in pairs] == [
        ("t1", "t2", ("gion", "kyoto", "ryokan"))
    ]
    few = [profile("t1", same, words), profile("t2", same, {"kyoto", "gion"})]
    assert merge_pairs(few, {}, settings) == []  # two shared keywords are not enough
    apart = [profile("t1", same, words), profile("t2", [0.6, 0.8], words)]
    assert merge_pairs(apart, {}, settings) == []  # similarity 0.6 under 0.85
    cousins = [profile("t1", same, words), profile("t2", same, words, parent_id="t9")]
    assert merge_pairs(cousins, {}, settings) == []
    parent = [profile("t1", same, words), profile("t2", same, words)]
    assert merge_pairs(parent, {"t3": "t1"}, settings) == []  # t1 has a subtopic


def _native_profiles(
    subjects: dict[str, list[tuple[str, str]]],
    roles: Roles,
    embedder: UseEmbedder,
    settings: Settings,
) -> list[TopicProfile]:
    """Each subject as a topic the native brief writer briefed, profiled as the review does."""
    profiles = []
    for rank, (name, exchanges) in enumerate(subjects.items()):
        messages: list[StoredMessage] = [
            {"id": f"{rank}-{i}-{role}", "role": role, "content": text}  # type: ignore[typeddict-item]
            for i, pair in enumerate(exchanges)
            for role, text in zip(("user", "assistant"), pair, strict=True)
        ]
        info = {"id": name, "name": "", "brief": "", "status": "active", "file": ""}
        topic_name, brief = roles.brief_writer.write(info, messages)  # type: ignore[arg-type]
        vector = embedder.embed([profile_text(topic_name, brief)])[0]
        keywords = topic_keywords(messages, settings.merge_keywords)
        profiles.append(TopicProfile(name, None, keywords, vector, rank))
    return profiles


def test_the_default_thresholds_merge_the_kyoto_duplicate_and_no_distinct_subject(
    roles: Roles, embedder: UseEmbedder
) -> None:
    """Calibration on the native briefs: what the defaults decide on real topics."""
    settings = Settings()
    subjects = {name: SUBJECTS[name] for name in ("stocks", "kyoto", "sourdough", "fitness")}
    subjects["kyoto again"] = KYOTO_AGAIN
    profiles = _native_profiles(subjects, roles, embedder, settings)
    pairs = merge_pairs(profiles, {}, settings)
    assert [(p.keep, p.retire) for p in pairs] == [("kyoto", "kyoto again")]
    for first, second in itertools.combinations(profiles, 2):
        if {first.topic_id, second.topic_id} != {"kyoto", "kyoto again"}:
            similarity = sum(a * b for a, b in zip(first.vector, second.vector, strict=True))
            assert similarity < settings.merge_similarity - 0.1, (first.topic_id, second.topic_id)


def test_the_review_graph_draws_every_step_and_branch() -> None:
    from langgraph_topics import build_review_graph

    drawn = build_review_graph().get_graph().draw_mermaid()
    for edge in (
        "__start__ -.-> review_briefs;",
        "__start__ -.-> review_request;",
        "review_briefs --> review_merge;",
        "review_merge --> review_archive;",
        "review_archive --> review_finish;",
        "review_finish --> __end__;",
        "review_request --> __end__;",
    ):
        assert edge in drawn


CHEERS = [
    ("Wow, Mel! That's amazing, thanks so much for sharing!", "Thanks Caroline! Glad you like it!"),
    ("Haha, so cool, love it! Mel, you're awesome.", "Aww thanks Caroline, you're the best!"),
    ("Wow, amazing! Thanks again, Mel!", "Thank you, Caroline! Talk soon!"),
]
"""Small talk both of the next two subjects are full of, as in LoCoMo's chats."""

PAINTING = [
    (
        "Mel, I painted a sunset over the lake with acrylics last weekend.",
        "The orange sky and "
        "the reflections on the water sound lovely; acrylics dry fast, so blend quickly.",
    ),
    (
        "Should I varnish the acrylic painting of the lake?",
        "Yes, a gloss varnish protects acrylic paint and deepens the colours of the sunset.",
    ),
]
POTTERY = [
    (
        "Mel, my pottery class made clay bowls on the wheel this week.",
        "Centering the clay on the wheel is the hardest part; the bowls will shrink in the kiln.",
    ),
    (
        "What glaze should I use for the clay bowls before firing?",
        "A food-safe stoneware glaze, fired to cone 6 in the kiln, suits the bowls.",
    ),
]


def test_topics_sharing_only_small_talk_and_names_never_merge(
    roles: Roles, embedder: UseEmbedder
) -> None:
    settings = Settings()
    subjects = {name: SUBJECTS[name] for name in ("stocks", "kyoto", "sourdough")}
    subjects["painting"] = CHEERS + PAINTING + CHEERS
    subjects["pottery"] = CHEERS + POTTERY + CHEERS
    subjects["kyoto again"] = KYOTO_AGAIN
    profiles = _native_profiles(subjects, roles, embedder, settings)
    for made in profiles:
        assert not made.keywords & {"wow", "amazing", "thanks", "cool", "awesome"}
    pairs = merge_pairs(profiles, {}, settings)
    assert [(p.keep, p.retire) for p in pairs] == [("kyoto", "kyoto again")]


def test_profile_text_and_keywords_leave_small_talk_out(embedder: UseEmbedder) -> None:
    cheers = "Wow, Mel! That is amazing, thanks so much! Haha, so cool. Aww, you are the best!"
    painting = ("Mel", f"{cheers} I painted a sunset over the lake. {cheers}")
    pottery = ("Mel", f"{cheers} My pottery class made clay bowls. {cheers}")
    assert "wow" not in profile_text(*painting).lower()
    assert "sunset" in profile_text(*painting)

    def similarity(texts: list[str]) -> float:
        first, second = embedder.embed(texts)
        return sum(a * b for a, b in zip(first, second, strict=True))

    as_written = similarity([f"{name}\n{brief}" for name, brief in (painting, pottery)])
    compared = similarity([profile_text(*painting), profile_text(*pottery)])
    assert compared < as_written - 0.1 and compared < Settings().merge_similarity
    messages: list[StoredMessage] = [
        {"id": "a", "role": "user", "content": "Wow, amazing, thanks!"},  # type: ignore[typeddict-item]
        {"id": "b", "role": "user", "content": "Gion ryokan in Kyoto, thanks so much"},  # type: ignore[typeddict-item]
    ]
    assert topic_keywords(messages, 12) >= {"gion", "ryokan", "kyoto"}
    assert not topic_keywords(messages, 12) & {"wow", "amazing", "thanks"}


def test_keywords_most_topics_share_are_no_shared_subject() -> None:
    settings = Settings()
    same = [1.0, 0.0]
    names = {"mel", "caroline", "counseling"}
    profiles = [profile("t1", same, names | {"sunset"}), profile("t2", same, names | {"clay"})]
    profiles += [profile(f"t{n}", [0.0, 1.0], names | {f"w{n}"}) for n in range(3, 6)]
    assert merge_pairs(profiles, {}, settings) == []  # only words most topics have
