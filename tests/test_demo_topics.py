"""The offline demo's topics are ones a person recognises (issue 11, acceptance), and its
replies are ones a person accepts from a retrieval-only assistant (issue 35 item 2).

The demo script is chatted through the native back ends at the demo's budget; each line of the
script names its subject, so the test finds the topics by what they hold, never by id.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from langgraph_topics.cli.demo import DEMO_BUDGET, load_script
from langgraph_topics.keywords import CHINESE_STOP_WORDS, ENGLISH_STOP_WORDS
from langgraph_topics.keywords.small_talk import is_small_talk
from langgraph_topics.memory import TopicMemory
from langgraph_topics.state.records import StoredMessage

_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, dict[str, str]], dict]:
    """Chat the script once; return the topics' names and messages, and where each line went."""
    script = load_script()
    with TopicMemory(
        data_dir=Path(tmp_path_factory.mktemp("demo")), budget_tokens=DEMO_BUDGET
    ) as memory:
        statuses: list[dict[str, str]] = []
        replies: list[str] = []
        windows: list[list[StoredMessage]] = []
        for line in script:
            replies.append(memory.chat("demo", line["text"]))
            now = memory.state("demo")
            topics_now = now.get("topics", {})
            statuses.append({topic_id: t["status"] for topic_id, t in topics_now.items()})
            windows.append(now["context"]["referenced_messages"])
        assert memory.check("demo").ok
        state = memory.state("demo")
        store = memory.services.branch_stores("demo", state).topic_store
        topics = memory.topics("demo")
        messages = {t["id"]: store.messages(t["id"]) for t in topics}
    root = {t["id"]: t["parent_id"] or t["id"] for t in topics}
    where: dict[str, str] = {}
    for topic_id, stored in messages.items():
        for message in stored:
            if message["role"] == "user":
                where[message["content"]] = root[topic_id]
    return {t["id"]: {"name": t["name"]} for t in topics}, {
        "script": script,
        "where": where,
        "messages": messages,
        "statuses": statuses,
        "replies": replies,
        "windows": windows,
    }


def _topics_of(found: dict, subject: str) -> set[str]:
    return {
        found["where"][line["text"]]
        for line in found["script"]
        if line["subject"] == subject and line["text"] in found["where"]
    }


@pytest.mark.parametrize("subject", ["kyoto", "sourdough"])
def test_each_subject_of_the_demo_is_one_topic(demo: tuple, subject: str) -> None:
    _, found = demo
    split_lines = [
        line
        for line in found["script"]
        if line["subject"] == subject and line["text"] in found["where"]
    ]
    assert len(split_lines) >= 4, f"the demo should have split the {subject} lines"
    assert len(_topics_of(found, subject)) == 1, f"{subject} is spread over several topics"


def test_kyoto_and_sourdough_are_different_topics(demo: tuple) -> None:
    _, found = demo
    assert _topics_of(found, "kyoto").isdisjoint(_topics_of(found, "sourdough"))


def test_goodbyes_and_thanks_stay_with_their_subject(demo: tuple) -> None:
    _, found = demo
    script = found["script"]
    chatter = [i for i, line in enumerate(script) if is_small_talk(line["text"])]
    assert len(chatter) >= 2, "the demo should say goodbye and thank you"
    for index in chatter:
        if script[index]["text"] in found["where"]:
            before = script[index - 1]["text"]
            assert found["where"][script[index]["text"]] == found["where"][before]


def test_no_topic_is_only_small_talk(demo: tuple) -> None:
    _, found = demo
    for topic_id, stored in found["messages"].items():
        users = [m["content"] for m in stored if m["role"] == "user"]
        assert not all(is_small_talk(text) for text in users), f"{topic_id} is only small talk"


def test_names_are_words_of_their_topic_without_stop_words(demo: tuple) -> None:
    topics, found = demo
    # The split batches (and so the words a topic is named from) vary with the length of the
    # replies, which quote random message ids: the subject's own word is what must be there.
    assert "Kyoto" in _name_of(topics, found, "kyoto")
    assert {"sourdough", "starter"} & set(_name_of(topics, found, "sourdough").split())
    for topic_id, topic in topics.items():
        name = topic["name"]
        assert " / " not in name, f"{name!r} is a keyword list, not a name"
        assert _says(found["messages"][topic_id], name)


def _name_of(topics: dict[str, dict[str, str]], found: dict, subject: str) -> str:
    (topic_id,) = _topics_of(found, subject)
    return topics[topic_id]["name"]


def _says(messages: list[StoredMessage], name: str) -> bool:
    """Whether every word of the name is a word its topic's messages use, and no stop word."""
    text = " ".join(m["content"] for m in messages)
    words = set(_LATIN_WORD.findall(text.lower()))
    for word in _LATIN_WORD.findall(name):
        # A broken stem ("alway", "ourselve") is in no message as a word of its own.
        assert word.lower() in words, f"{word!r} of {name!r} is not a word of its topic"
        assert word.lower() not in ENGLISH_STOP_WORDS, f"{name!r} holds the stop word {word!r}"
    chinese = re.sub(r"[A-Za-z0-9\s'-]+", "", name)
    assert not chinese or chinese in text, f"{name!r} is not said in its topic"
    assert chinese not in CHINESE_STOP_WORDS
    return True


def test_a_topic_falls_dormant_and_a_dormant_one_comes_back(demo: tuple) -> None:
    # Conservative dormancy (seed 000 §4.7: ``dormancy_rounds`` 3): the script stays on Rust
    # long enough for the other subjects to sleep, then returns to them.
    _, found = demo
    slept: dict[str, int] = {}
    woke: list[str] = []
    for turn, statuses in enumerate(found["statuses"]):
        for topic_id, status in statuses.items():
            if status == "dormant":
                slept.setdefault(topic_id, turn)
            elif status == "active" and topic_id in slept:
                woke.append(topic_id)
                del slept[topic_id]
    assert slept or woke, "no topic of the demo fell dormant"
    assert woke, "no dormant topic of the demo came back"


def test_subject_labels_cover_the_script() -> None:
    counts: dict[str, int] = defaultdict(int)
    for line in load_script():
        counts[line["subject"]] += 1
    assert set(counts) == {"stocks", "kyoto", "sourdough", "fitness", "rust"}


_QUOTED = re.compile(r"“([^”]*)”|「([^」]*)」")


def test_replies_quote_what_the_user_said_never_a_reply(demo: tuple) -> None:
    _, found = demo
    said = [line["text"] for line in found["script"]]
    for turn, reply in enumerate(found["replies"], start=1):
        quotes = [a or b for a, b in _QUOTED.findall(reply)]
        for quote in quotes:
            whole = quote in said
            clipped = quote.endswith("…") and any(s.startswith(quote[:-1]) for s in said)
            # A reply quoted inside a reply would show here as a quote holding a quote.
            assert whole or clipped, f"turn {turn} quotes {quote!r}, which the user never said"
        assert not any(q in reply for q in ("«", "««")), f"turn {turn}: {reply!r}"


def test_no_nothing_yet_while_the_window_quotes_the_user(demo: tuple) -> None:
    """Whenever a topic block quotes what the user said (a woken topic's messages included),
    the memory found it relevant: the reply answers from it instead of having "nothing"."""
    _, found = demo
    for turn, (reply, window) in enumerate(zip(found["replies"], found["windows"], strict=True)):
        said = [m for m in window if m["role"] == "user" and not is_small_talk(m["content"])]
        if said:
            assert "earlier context" not in reply and "还没有关于这个" not in reply, (
                f"turn {turn + 1} has nothing to say while its window quotes {said[0]['content']!r}"
            )


def test_the_returns_are_answered_from_their_topic(demo: tuple) -> None:
    _, found = demo
    script, replies = found["script"], found["replies"]
    for index in range(len(script) - 3, len(script)):  # fitness, sourdough, Kyoto again
        subject = script[index]["subject"]
        earlier = {line["text"] for line in script[:index] if line["subject"] == subject}
        quotes = {a or b for a, b in _QUOTED.findall(replies[index])}
        assert quotes & earlier, f"turn {index + 1} ({subject}) quotes none of its subject"
