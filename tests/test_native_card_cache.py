"""Native cards of the same messages are made once: the same card, never a shared one."""

from __future__ import annotations

from langgraph_topics.state.records import StoredMessage
from langgraph_topics.summaries import native
from langgraph_topics.summaries.card import SummaryCard
from langgraph_topics.summaries.native import native_card
from langgraph_topics.tokens import default_token_counter

COUNT = default_token_counter()
MESSAGES: list[StoredMessage] = [
    {"id": "a1", "role": "user", "content": "Should we deploy the cache server on Friday?"},
    {
        "id": "a2",
        "role": "assistant",
        "content": "We decided to deploy on Monday because Friday has no on-call. See deploy.yaml.",
        "timestamp": "2024-05-01T09:00:00",
    },
    {"id": "a3", "role": "user", "content": "Still open: who reviews `cache_ttl`?"},
]


def _card(messages: list[StoredMessage], text: str = "Deploy moved to Monday.") -> SummaryCard:
    return native_card(messages, text, name="deploy", count_tokens=COUNT)


def test_a_card_made_again_equals_one_made_without_the_cache() -> None:
    native._facts.cache_clear()
    first = _card(MESSAGES)
    assert native._facts.cache_info().misses == 1
    again = _card([dict(m) for m in MESSAGES])  # equal records, other objects
    assert native._facts.cache_info().hits == 1
    assert again == first
    assert first["decisions"] and first["entities"] and first["unresolved"]
    first["decisions"][0]["message_ids"].append("zz")
    first["topics"].clear()
    assert _card(MESSAGES) == again  # the cached facts are not the caller's
    other = _card(MESSAGES, "Another summary.")
    assert other["text"] == "Another summary." and other["topics"] == again["topics"]


def test_other_content_under_the_same_ids_makes_another_card() -> None:
    changed = [dict(m) for m in MESSAGES]
    changed[1]["content"] = "Nothing was settled."
    assert _card(changed) != _card(MESSAGES)
    assert _card(changed)["decisions"] == []
