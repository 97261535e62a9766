"""The topic windows' views of whole topics: reused while a topic grows, never stale."""

from __future__ import annotations

import random
from collections.abc import Sequence

from langgraph_topics.namespace.policy import NamespacePolicy
from langgraph_topics.namespace.reference import REFERENCE_PREFIX
from langgraph_topics.namespace.topic_views import TopicViews
from langgraph_topics.namespace.window import windowed_messages
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.message_views import MessagesView

POLICY = NamespacePolicy()
BIG = "line\n" * 80


def _message(number: int, *, tool: bool = False, content: str | None = None) -> StoredMessage:
    if tool:
        return {"id": f"m{number}", "role": "tool", "content": content or BIG, "name": "grep"}
    return {"id": f"m{number}", "role": "user", "content": content or f"message {number}"}


class CountingRender:
    def __init__(self) -> None:
        self.seen: list[int] = []

    def __call__(self, messages: Sequence[StoredMessage]) -> list[StoredMessage]:
        self.seen.append(len(messages))
        return windowed_messages(messages, POLICY, "en")


def test_a_growing_topic_renders_only_its_new_messages() -> None:
    views, render = TopicViews(), CountingRender()
    topic = [_message(n, tool=n % 7 == 3) for n in range(50)]
    first = views.view("k", topic, render)
    topic += [_message(50), _message(51, tool=True)]
    second = views.view("k", topic, render)
    assert render.seen == [50, 2]
    assert first == windowed_messages(topic[:50], POLICY, "en")
    assert second == windowed_messages(topic, POLICY, "en")
    assert REFERENCE_PREFIX in second[51]["content"] and second[50] is topic[50]
    second.append(_message(99))  # the caller's list: the cache keeps its own
    assert views.view("k", topic, render) == windowed_messages(topic, POLICY, "en")


def test_a_changed_or_reread_topic_is_rendered_again_whole() -> None:
    views, render = TopicViews(), CountingRender()
    topic = [_message(n) for n in range(20)]
    views.view("k", topic, render)
    changed = list(topic)
    changed[5] = _message(5, tool=True)  # same length, other content
    assert views.view("k", changed, render) == windowed_messages(changed, POLICY, "en")
    reread = [dict(m) for m in changed]  # equal records, new objects (a file read again)
    assert views.view("k", reread, render) == windowed_messages(reread, POLICY, "en")
    shorter = changed[:10]
    assert views.view("k", shorter, render) == windowed_messages(shorter, POLICY, "en")
    assert render.seen == [20, 20, 20, 10]


def test_views_always_equal_a_fresh_rendering() -> None:
    rng = random.Random(7)
    views, render = TopicViews(entries=3), CountingRender()
    topics: dict[str, list[StoredMessage]] = {key: [] for key in "abcde"}
    number = 0
    for _ in range(300):
        key = rng.choice("abcde")
        action = rng.random()
        topic = topics[key]
        if action < 0.6:
            for _ in range(rng.randint(0, 4)):
                topic.append(_message(number, tool=rng.random() < 0.2))
                number += 1
        elif action < 0.7 and topic:
            place = rng.randrange(len(topic))
            topic[place] = _message(number, tool=rng.random() < 0.5)
            number += 1
        elif action < 0.8:
            topics[key] = topic = topic[: rng.randint(0, len(topic))]
        assert views.view(key, topic, render) == windowed_messages(topic, POLICY, "en")
    assert len(views._views) <= 3


def test_a_store_view_grows_without_copies_and_never_goes_stale() -> None:
    views, render = TopicViews(), CountingRender()
    plain = [_message(n) for n in range(30)]
    first = views.view("plain", MessagesView(plain), render)
    plain.append(_message(30))
    second = views.view("plain", MessagesView(plain), render)
    assert render.seen == [30, 1]
    # Without large tool results the view is the store's own list: nothing kept beside it.
    assert isinstance(second, MessagesView) and second.source is plain and len(first) == 30
    plain.append(_message(31, tool=True))
    third = views.view("plain", MessagesView(plain), render)
    assert list(third) == windowed_messages(plain, POLICY, "en") and third.source is not plain
    assert list(first) == plain[:30] and list(second) == plain[:31]
    shorter = MessagesView(plain, 10)  # an older snapshot of the same list
    assert list(views.view("plain", shorter, render)) == plain[:10]
    reread = [dict(m) for m in plain]  # the topic read again: another list
    assert list(views.view("plain", MessagesView(reread), render)) == list(third)
    assert render.seen == [30, 1, 1, 32]


def test_store_views_always_equal_a_fresh_rendering() -> None:
    rng = random.Random(11)
    views, render = TopicViews(entries=3), CountingRender()
    lists: dict[str, list[StoredMessage]] = {key: [] for key in "abcd"}
    number = 0
    for _ in range(300):
        key = rng.choice("abcd")
        action = rng.random()
        if action < 0.7:
            for _ in range(rng.randint(0, 4)):
                lists[key].append(_message(number, tool=rng.random() < 0.1))
                number += 1
        elif action < 0.8:  # rewritten (a merge, a division): the store makes a new list
            lists[key] = [dict(m) for m in lists[key][: rng.randint(0, len(lists[key]))]]
        topic = lists[key]
        length = rng.randint(0, len(topic)) if rng.random() < 0.2 else len(topic)
        shown = views.view(key, MessagesView(topic, length), render)
        assert list(shown) == windowed_messages(topic[:length], POLICY, "en")
