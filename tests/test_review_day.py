"""The review's day digests and its "unrelated to the current discussion" criterion (§4.8).

Seed 000 §4.8 compresses each topic the day touched into its summary, never deleting a message,
and archives a dormant topic only when it is unrelated to the current discussion.
"""

from __future__ import annotations

from typing import Any

from conftest import MemoryFactory
from conversations import SUBJECTS
from fakes import with_roles
from review_support import BlockSplitter, block_of

from langgraph_topics import TopicMemory
from langgraph_topics.roles.protocols import Roles

THREAD = "t"

OSAKA = [
    (
        "We are planning a trip to Osaka in Japan this autumn. Which area is best to stay in?",
        "Stay near Namba or Umeda: trains to Kyoto and Nara, street food in Dotonbori.",
    ),
    (
        "Is a day trip from Osaka to the temples of Kyoto and Nara easy by train?",
        "Yes: Kyoto is 30 minutes by JR, Nara 45 minutes; a Kansai pass covers both.",
    ),
    (
        "Would you suggest a ryokan or a hotel for a first trip to Japan?",
        "One night in a traditional ryokan with dinner, the rest in a hotel near the station.",
    ),
]
"""The current discussion: a trip to Japan, close to the old Kyoto trip but not the same."""


def records(blocks: list[tuple[str, list[tuple[str, str]], str]]) -> list[dict[str, Any]]:
    """Import records, ids ``<block>-<n>``, one exchange a day from each block's first day."""
    made: list[dict[str, Any]] = []
    for block, exchanges, first_day in blocks:
        for turn, (question, answer) in enumerate(exchanges):
            stamp = f"{first_day[:8]}{int(first_day[8:]) + turn:02d}T10:00:00"
            for role, text in (("user", question), ("assistant", answer)):
                made.append(
                    {
                        "id": f"{block}-{len(made):03d}",
                        "role": role,
                        "content": text,
                        "timestamp": stamp,
                    }
                )
    return made


def imported(
    make_memory: MemoryFactory,
    roles: Roles,
    blocks: list[tuple[str, list[tuple[str, str]], str]],
    budget: int = 900,
) -> TopicMemory:
    splitter = BlockSplitter()
    memory = make_memory(budget=budget, roles=with_roles(roles, splitter=splitter), keep_recent=2)
    splitter.locate = lambda i: memory.services.stores(THREAD).topic_store.locate(i)
    memory.import_messages(THREAD, records(blocks))
    return memory


def topics_by_block(memory: TopicMemory) -> dict[str, str]:
    store = memory.services.stores(THREAD).topic_store
    return {block_of(store.messages(t)[0]["id"]): t for t in store.topic_ids()}


def test_a_dormant_topic_close_to_the_current_discussion_is_kept_an_unrelated_one_archived(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    memory = imported(
        make_memory,
        roles,
        [
            ("kyoto", SUBJECTS["kyoto"], "2024-01-10"),
            ("stocks", SUBJECTS["stocks"], "2024-02-10"),
            ("osaka", OSAKA, "2024-06-10"),
        ],
    )
    blocks = topics_by_block(memory)
    assert set(blocks) == {"kyoto", "stocks", "osaka"}
    # An import activates every topic it files at its last split; turns since would have let
    # the two old ones fall dormant in their own months.
    topics = dict(memory.state(THREAD)["topics"])
    for block, last in (("kyoto", "2024-01-13T10:00:00"), ("stocks", "2024-02-13T10:00:00")):
        topics[blocks[block]] = {
            **topics[blocks[block]],
            "status": "dormant",
            "last_active_at": last,
        }
    memory.graph.update_state(memory.run_config(THREAD), {"topics": topics})
    done = memory.review(THREAD, now="2024-06-14")
    assert done["merged"] == []  # related, not one subject
    archived = {a["topic_id"]: a["reason"] for a in done["archived"]}
    assert list(archived) == [blocks["stocks"]]
    assert archived[blocks["stocks"]].startswith("dormant")
    kept = {k["topic_id"]: k["reason"] for k in done.get("kept") or []}
    assert list(kept) == [blocks["kyoto"]]
    assert "related to the current discussion" in kept[blocks["kyoto"]], kept
    statuses = {t["id"]: t["status"] for t in memory.topics(THREAD)}
    assert statuses[blocks["kyoto"]] != "archived" and statuses[blocks["stocks"]] == "archived"
    events = memory.state(THREAD)["events"]
    assert any(e["kind"] == "kept" and e["topic_ids"] == [blocks["kyoto"]] for e in events)
    assert memory.check(THREAD).ok


def test_a_review_compresses_each_day_into_the_card_once_and_keeps_every_message(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    memory = imported(
        make_memory,
        roles,
        [
            ("kyoto", SUBJECTS["kyoto"], "2024-06-01"),
            ("osaka", OSAKA, "2024-06-10"),
            ("fitness", SUBJECTS["fitness"], "2024-06-20"),
        ],
        budget=400,
    )
    blocks = topics_by_block(memory)
    assert {"kyoto", "osaka"} <= set(blocks)
    transcript = memory.transcript(THREAD)
    store = memory.services.stores(THREAD).topic_store
    held = {t: [m["id"] for m in store.messages(t)] for t in store.topic_ids()}

    done = memory.review(THREAD, now="2024-06-24")
    assert set(done["digested"]) == set(blocks.values())
    store = memory.services.stores(THREAD).topic_store
    for block, topic_id in blocks.items():
        days = store.meta(topic_id)["brief_card"]["days"]
        by_day = {d["day"]: d for d in days}
        assert len(by_day) == len(days)  # one digest a day
        messages = store.messages(topic_id)
        assert [m["id"] for m in messages] == held[topic_id]  # nothing moved or deleted
        for message in messages:  # every message is in the digest of the day it was said on
            assert message["id"] in by_day[message["timestamp"][:10]]["message_ids"]
        assert all(d["text"] and d["day"].startswith("2024-06") for d in days), block
    assert memory.check(THREAD).ok
    assert memory.transcript(THREAD) == transcript

    again = memory.review(THREAD, now="2024-06-24T18:00:00")  # the same day, nothing new
    assert again["digested"] == [] and again["rebriefed"] == []
    store = memory.services.stores(THREAD).topic_store
    days = {b: len(store.meta(t)["brief_card"]["days"]) for b, t in blocks.items()}
    assert (days["kyoto"], days["osaka"]) == (len(SUBJECTS["kyoto"]), len(OSAKA))


def test_a_brief_written_after_the_review_keeps_its_days(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    memory = imported(make_memory, roles, [("osaka", OSAKA, "2024-06-10")], budget=250)
    topic = topics_by_block(memory)["osaka"]
    memory.review(THREAD, now="2024-06-13")
    store = memory.services.stores(THREAD).topic_store
    card = store.meta(topic)["brief_card"]
    days = card["days"]
    assert [d["day"] for d in days] == ["2024-06-10", "2024-06-11"]  # the 12th is unsplit
    # A split rewrites the brief with a card built afresh, which knows nothing of days.
    later = {key: value for key, value in card.items() if key != "days"}
    store.set_brief(topic, "osaka", "the brief of a later split", card=later)  # type: ignore[arg-type]
    assert store.meta(topic)["brief_card"]["days"] == days
    assert store.meta(topic)["brief"] == "the brief of a later split"
