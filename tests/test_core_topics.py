"""The core tier of a registry, ruled out cheaply, is the tier every full score gives."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from langgraph_topics.scoring import core_topics, score_topics
from langgraph_topics.state.records import TopicRecord, TopicUsage

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _registry(rng: random.Random, count: int) -> dict[str, TopicRecord]:
    topics: dict[str, TopicRecord] = {}
    for n in range(count):
        usage: TopicUsage = {}
        for counter in ("recalled", "searched", "referenced", "updated"):
            if rng.random() < 0.6:
                usage[counter] = rng.choice([1, 2, 3, 5, 8, 40, 300])  # type: ignore[literal-required]
        if rng.random() < 0.2:
            usage["pinned"] = True
        if rng.random() < 0.3:
            usage["rating"] = rng.randint(1, 5)
        active = NOW - timedelta(days=rng.choice([0, 0.5, 3, 30, 400]))
        topics[f"t{n}"] = {
            "id": f"t{n}",
            "name": f"topic {n}",
            "status": rng.choice(["active", "active", "dormant", "archived"]),
            "parent_id": None,
            "scores": [],
            "created_at": "2026-01-01T00:00:00+00:00",
            "last_active_at": rng.choice([active.isoformat(), "not a time"]),
            "message_count": rng.randint(0, 20),
            "usage": usage,
        }
    return topics


def test_the_core_tier_is_the_full_scores_core_tier() -> None:
    rng = random.Random(7)
    cores = 0
    for decay in (90.0, 1.0, 3650.0):
        topics = _registry(rng, 400)
        scored = score_topics(topics, NOW, decay_days=decay)
        expected = {topic_id for topic_id, s in scored.items() if s.tier == "core"}
        assert core_topics(topics, NOW, decay_days=decay) == expected
        cores += len(expected)
    assert cores > 20  # both sides of the bound were seen


def test_a_score_at_the_core_bound_is_decided_by_the_full_score() -> None:
    # Recalled once, pinned and referenced 4 times, a topic is core (0.9038) when just active
    # and falls to essence within a month; referenced 3 times it stays just under (0.8926).
    # Such topics pass the cheap bound: only their full score decides.
    seen: set[str] = set()
    for referenced in (3, 4):
        for hours in (0, 1, 12, 48, 24 * 30):
            record: TopicRecord = {
                "id": "t",
                "name": "bound",
                "status": "active",
                "parent_id": None,
                "scores": [],
                "created_at": "2026-01-01T00:00:00+00:00",
                "last_active_at": (NOW - timedelta(hours=hours)).isoformat(),
                "message_count": 8,
                "usage": {"recalled": 1, "pinned": True, "referenced": referenced},
            }
            tier = score_topics({"t": record}, NOW)["t"].tier
            seen.add(tier)
            assert core_topics({"t": record}, NOW) == ({"t"} if tier == "core" else set())
    assert seen == {"core", "essence"}
