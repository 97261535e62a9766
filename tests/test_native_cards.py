"""Native cards of topic results are kept while their topic and quotes stay the same."""

from __future__ import annotations

from pathlib import Path

from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.message_views import MessagesView
from langgraph_topics.stores.topic_store import JsonlTopicStore
from langgraph_topics.summaries.card import SummaryCard
from langgraph_topics.summaries.native import native_card
from langgraph_topics.summaries.native_cards import NativeCards


def _topic(count: int) -> list[StoredMessage]:
    return [
        {"id": f"m{n}", "role": "user", "content": f"we decided to use `pool_size` {n}"}
        for n in range(count)
    ]


class Maker:
    def __init__(self, messages: list[StoredMessage]) -> None:
        self.messages = messages
        self.made = 0

    def __call__(self) -> SummaryCard:
        self.made += 1
        return native_card(self.messages[-2:], "About pools.", name="pools", count_tokens=len)


def test_the_same_topic_and_quotes_make_the_card_once() -> None:
    cards, topic = NativeCards(), _topic(10)
    make = Maker(topic)
    first = cards.card(MessagesView(topic), ("m8", "m9"), make)
    again = cards.card(MessagesView(topic), ("m8", "m9"), make)
    assert make.made == 1
    assert again == first == make()
    # Copies: a reader changing its card changes no other.
    again["topics"][0]["message_ids"].append("x")
    again["decisions"].clear()
    assert cards.card(MessagesView(topic), ("m8", "m9"), make) == first


def test_a_grown_topic_other_quotes_or_another_list_make_it_again() -> None:
    cards, topic = NativeCards(), _topic(10)
    make = Maker(topic)
    cards.card(MessagesView(topic), ("m8", "m9"), make)
    topic.append({"id": "m10", "role": "user", "content": "a split appended this"})
    cards.card(MessagesView(topic), ("m8", "m9"), make)  # the same list, longer
    assert make.made == 2
    cards.card(MessagesView(topic), ("m9", "m10"), make)  # other quotes
    assert make.made == 3
    rewritten = list(topic)  # a merge or a division: the topic gets a new list
    cards.card(MessagesView(rewritten), ("m9", "m10"), make)
    assert make.made == 4
    # An older snapshot of the list (a reader that started earlier) is not the same topic.
    cards.card(MessagesView(rewritten, 5), ("m9", "m10"), make)
    assert make.made == 5


def test_the_cards_stay_bounded() -> None:
    cards = NativeCards(entries=3)
    topics = [_topic(n + 2) for n in range(6)]
    for topic in topics:
        cards.card(MessagesView(topic), (), Maker(topic))
        assert len(cards._cards) <= 3
    make = Maker(topics[0])
    cards.card(MessagesView(topics[0]), (), make)
    assert make.made == 1  # the oldest went first


def test_a_store_topic_appended_merged_or_forked_makes_it_again(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    pools = store.create_topic("pools", "connection pools")["id"]
    other = store.create_topic("pool sizes", "sizes")["id"]
    store.append(pools, _topic(6))
    store.append(other, [{"id": "o1", "role": "user", "content": "see `pool_sizes.md`"}])
    before = store.visible_ranges()
    cards = NativeCards()

    def fresh(view: MessagesView) -> SummaryCard:
        return native_card(list(view), "About pools.", name="pools", count_tokens=len)

    def card_of(view: MessagesView) -> tuple[SummaryCard, int]:
        made: list[int] = []

        def make() -> SummaryCard:
            made.append(1)
            return fresh(view)

        card = cards.card(view, ("pools",), make)
        assert card == fresh(view)
        return card, len(made)

    assert card_of(store.messages_view(pools))[1] == 1
    assert card_of(store.messages_view(pools))[1] == 0  # a turn without a split
    store.append(pools, [{"id": "m6", "role": "assistant", "content": "go with `max_idle`"}])
    appended, made = card_of(store.messages_view(pools))
    assert made == 1 and "max_idle" in [fact["name"] for fact in appended["entities"]]
    store.merge_topics(other, pools)
    merged, made = card_of(store.messages_view(pools))
    assert made == 1 and "pool_sizes.md" in [fact["name"] for fact in merged["entities"]]
    fork = JsonlTopicStore(tmp_path, visible=before)  # a checkpoint from before the append
    forked, made = card_of(fork.messages_view(pools))
    assert made == 1 and "max_idle" not in [fact["name"] for fact in forked["entities"]]
