"""Recall in the user's words (seed 000 §4.7–4.8): explicit look-up requests, zh and en.

The table holds the seed's own example ("帮我找一下上个月讨论的 XX") and paraphrases of it (with
or without a time, with or without "we", the object before or after the request), and the
wordings that only look alike: looking up what is not in the conversation, talk that is
planned, one's own memories, someone else's conversations. Those wake nothing; the index
window decides about them as about any message.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from conftest import MemoryFactory
from fakes import with_roles
from hypothesis import given
from hypothesis import strategies as st
from review_support import BlockSplitter, block_of, block_records

from langgraph_topics import TopicMemory
from langgraph_topics.activation.date_query import find_date_query
from langgraph_topics.activation.recall_cues import find_lookup_request, find_recall_cue
from langgraph_topics.roles.protocols import Roles

REQUESTS = [
    # The seed's example (§4.8) and its paraphrases.
    "帮我找一下上个月讨论的 XX",
    "帮我找一下上个月讨论的酸面包",
    "帮我找一下之前讨论的酸面包",
    "帮我找找我们上次聊的那个预算方案",
    "查一下我们之前讨论过的日本行程",
    "你帮我回忆一下我们上周讨论了什么",
    "麻烦你翻一下之前聊过的健身计划",
    "帮我搜一下上个月我们聊的股票",
    "能不能找一下我说过的那个链接",
    "帮我查查你之前推荐的那家酒店",
    "找一下讨论过的那个配方",
    "回顾一下我们三月份讨论的内容",
    "帮我查一下2024年4月讨论的酸面包",
    "我们上次聊的预算，帮我找出来",
    "之前讨论的酸面包，你再帮我看看",
    "翻翻聊天记录，找一下那个地址",
    "我想不起来我们之前聊的那个方案了",
    "上周我们讨论的那个问题怎么样了",
    "之前聊的那个京都旅馆叫什么",
    "帮我找一下咱们前几天说的那个餐厅",
    "帮我找一下两个月前讨论的预算",
    "请帮我调出去年讨论过的投资计划",
    "你能查一下跟你聊过的那本书吗",
    "Can you look up what we discussed about sourdough?",
    "Can you look up what we discussed about the budget last month?",
    "Could you find what I told you about my allergy?",
    "Please dig up our conversation about the Kyoto trip.",
    "Look up the recipe you suggested last week.",
    "Search our chat history for the hotel name.",
    "Can you pull up what we decided on the logo?",
    "Remind me what we talked about regarding the budget.",
    "Find the discussion about stocks from last month.",
    "Go back to what you said about the P/E ratio.",
    "What was that ryokan we talked about?",
    "I can't remember what we decided about the hotel.",
    "Can you check what I said earlier about the flight?",
    "Look up what was discussed last week about the trip.",
    "Could you retrieve the plan we came up with yesterday?",
    "Help me find the thing you recommended for my starter.",
    "Can you recall what we covered about valuation?",
]
NOT_REQUESTS = [
    "帮我找一家餐厅",
    "我们来讨论一下预算吧",
    "我记得小时候很开心",
    "帮我查一下明天的天气",
    "帮我搜一下酸面包的做法",
    "他们上次讨论的结果我不清楚",  # someone else's talk
    "他之前讲的故事很有趣",
    "帮我找一下上周的会议纪要",  # a document, not the conversation: the index window decides
    "我们讨论一下下周的计划",
    "记得3月3号带护照",
    "帮我找个好一点的健身房",
    "我在找一份新工作",
    "上个月我去了日本",
    "朋友昨天跟我聊了很久",
    "let's discuss the budget",
    "I remember my childhood fondly",
    "Find me a good restaurant near Gion.",
    "Look up the weather in Paris.",
    "Can you look up what the weather is like in Kyoto?",
    "Search the web for what people said about the election.",
    "Remind me to buy milk tomorrow.",
    "We should talk about the budget next week.",
    "I talked to my friend last week about the trip.",
    "Can you find a recipe for sourdough bread?",
    "Please check my code for bugs.",
    "What is the capital of France?",
    "My flight is on March 3.",
    "I'd like to discuss our options for dinner.",
    "Can you help me find a hotel in Kyoto?",
    "Let's go over the plan again tomorrow.",
]


def test_the_table_is_large_enough() -> None:
    assert len(REQUESTS) + len(NOT_REQUESTS) >= 60
    assert not set(REQUESTS) & set(NOT_REQUESTS)


@pytest.mark.parametrize("text", REQUESTS)
def test_a_look_up_request_is_a_recall_cue(text: str) -> None:
    assert find_recall_cue(text), text


@pytest.mark.parametrize("text", NOT_REQUESTS)
def test_what_only_looks_like_one_is_no_cue(text: str) -> None:
    assert find_recall_cue(text) is None, find_recall_cue(text)


TODAY = date(2024, 5, 15)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("帮我找一下上个月讨论的 XX", "2024-04-01", "2024-04-30"),
        ("帮我查一下2024年4月讨论的酸面包", "2024-04-01", "2024-04-30"),
        ("帮我找一下两个月前讨论的预算", "2024-03-01", "2024-03-31"),
        (
            "Can you look up what we discussed about the budget last month?",
            "2024-04-01",
            "2024-04-30",
        ),
    ],
)
def test_a_request_with_a_time_is_a_date_query_too(text: str, start: str, end: str) -> None:
    query = find_date_query(text, TODAY)
    assert query is not None
    assert [(p.start.isoformat(), p.end.isoformat()) for p in query.periods] == [(start, end)]


def test_a_request_without_a_time_is_no_date_query() -> None:
    assert find_recall_cue("帮我找一下之前讨论的酸面包") == "找一下之前讨论的"
    assert find_date_query("帮我找一下之前讨论的酸面包", TODAY) is None
    assert find_date_query("帮我找一下上周的会议纪要", TODAY) is None  # a date, no request


@given(st.text())
def test_the_recogniser_never_raises(text: str) -> None:
    found = find_lookup_request(text)
    assert found is None or found in text


# ---------------------------------------------------------------- an archived topic comes back


def _archived_thread(
    make_memory: MemoryFactory, roles: Roles
) -> tuple[TopicMemory, dict[str, str]]:
    """Six monthly blocks of 2024 (``review_support``), every topic archived by a review."""
    splitter = BlockSplitter()
    memory = make_memory(budget=900, roles=with_roles(roles, splitter=splitter), keep_recent=8)
    splitter.locate = lambda i: memory.services.stores("t").topic_store.locate(i)
    memory.import_messages("t", block_records())
    store = memory.services.stores("t").topic_store
    blocks = {block_of(store.messages(t)[0]["id"]): t for t in store.topic_ids()}
    memory.review("t", now="2030-01-01")
    assert all(t["status"] == "archived" for t in memory.state("t")["topics"].values())
    # The user writes in May 2024: "last month" is April, the sourdough block's month.
    memory.services.clock = lambda: datetime(2024, 5, 15, 9, tzinfo=UTC)
    return memory, blocks


def _statuses(memory: TopicMemory, blocks: dict[str, str]) -> dict[str, str]:
    topics = memory.state("t")["topics"]
    return {block: topics[t]["status"] for block, t in blocks.items() if t in topics}


def test_the_seeds_example_wakes_the_archived_topic_of_last_month(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    memory, blocks = _archived_thread(make_memory, roles)
    memory.chat("t", "帮我找一家餐厅")  # a look-up, but not of the conversation: nothing wakes
    assert set(_statuses(memory, blocks).values()) == {"archived"}

    memory.chat("t", "帮我找一下上个月讨论的酸面包")
    state = memory.state("t")
    kinds = [e["kind"] for e in state["events"]]
    assert "recall_cue" in kinds and "date_query" in kinds
    statuses = _statuses(memory, blocks)
    assert statuses["sourdough"] == "active"
    assert blocks["sourdough"] in state["context"]["topic_ids"]  # in the window this turn
    # The other months stay where the review put them.
    assert {block for block, status in statuses.items() if status != "archived"} == {"sourdough"}, (
        statuses
    )
    assert memory.check("t").ok


def test_a_request_without_a_time_wakes_the_archived_topic_it_names(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    memory, blocks = _archived_thread(make_memory, roles)
    memory.chat("t", "Can you look up what we discussed about the sourdough starter?")
    state = memory.state("t")
    assert "date_query" not in [e["kind"] for e in state["events"]]  # no period: a cue only
    assert _statuses(memory, blocks)["sourdough"] == "active"
    assert blocks["sourdough"] in state["context"]["topic_ids"]
    assert memory.check("t").ok
