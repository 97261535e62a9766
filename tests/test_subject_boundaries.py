"""Subject boundaries the native splitter sees (issue 36 item 1).

A switch of subject starts another topic, and small talk stays with the subject it follows.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import MemoryFactory

from langgraph_topics.roles.native import NativeSplitter
from langgraph_topics.state.records import Role, StoredMessage
from langgraph_topics.state.units import group_units
from langgraph_topics.stores.embeddings import UseEmbedder


@pytest.fixture(scope="module")
def embedder() -> UseEmbedder:
    return UseEmbedder()


def msg(id_: str, role: Role, content: str) -> StoredMessage:
    return {"id": id_, "role": role, "content": content}


STOCKS = [
    msg("s1", "user", "最近美股的估值是不是太高了？"),
    msg("s2", "assistant", "标普500的市盈率现在大约是25倍，高于历史平均水平，科技股的估值尤其高。"),
    msg("s3", "user", "那科技股现在还值得买入吗？"),
    msg("s4", "assistant", "如果长期持有，可以分批买入科技股，注意控制仓位和估值风险。"),
]
COOKING = [
    msg("c1", "user", "How do I make braised pork belly?"),
    msg("c2", "assistant", "Brown the pork belly, then simmer it with soy sauce and sugar."),
    msg("c3", "user", "Can I use a pressure cooker instead?"),
    msg("c4", "assistant", "Yes, a pressure cooker cuts the simmering time to 25 minutes."),
]


def stream_example() -> list[dict[str, Any]]:
    """The stream example of docs/studio.md: Kyoto and sourdough questions taking turns."""
    records: list[dict[str, Any]] = []
    for n in range(8):
        records += [
            {
                "id": f"k{n}q",
                "role": "user",
                "content": f"Kyoto, question {n}: which temples should we see in April?",
            },
            {
                "id": f"k{n}a",
                "role": "assistant",
                "content": f"Answer {n}: Kiyomizu-dera early, then Fushimi Inari at dawn.",
            },
            {
                "id": f"s{n}q",
                "role": "user",
                "content": f"Sourdough, question {n}: my starter smells of acetone. Is it dead?",
            },
            {
                "id": f"s{n}a",
                "role": "assistant",
                "content": f"Answer {n}: it is hungry; feed it twice a day for a few days.",
            },
        ]
    return records


@pytest.mark.xfail(
    strict=True,
    reason="issue 36 item 1, open: the native splitter keeps the alternating subjects in one "
    "topic (benchmarks/README, bench topics, interleaved: tried and not kept)",
)
def test_the_stream_example_alternating_kyoto_and_sourdough_gives_two_topics(
    make_memory: MemoryFactory,
) -> None:
    memory = make_memory(budget=600)
    memory.import_messages("alice", stream_example())
    located = memory.services.stores("alice").topic_store.message_ids()
    assert located, "the import split nothing"
    subjects: dict[str, set[str]] = {}
    for message_id, topic_id in located.items():
        subjects.setdefault(topic_id, set()).add(message_id[0])
    assert sorted(subjects.values(), key=sorted) == [{"k"}, {"s"}]


def test_a_switch_inside_a_split_starts_another_topic_and_a_goodbye_stays(
    embedder: UseEmbedder,
) -> None:
    bye = [
        msg("g1", "user", "Great, thanks! Gotta run, talk later."),
        msg("g2", "assistant", "Bye!"),
    ]
    plan = NativeSplitter(embedder).split(group_units(STOCKS + bye + COOKING), [])
    target_of = {i: a["new_key"] for a in plan["assignments"] for i in a["message_ids"]}
    assert target_of["s1"] == target_of["s4"] == target_of["g1"] == target_of["g2"]
    assert target_of["c1"] == target_of["c4"] != target_of["s1"]
    assert len(plan["new_topics"]) == 2
