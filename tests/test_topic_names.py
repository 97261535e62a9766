"""Topic names distinct within a thread (issue 36 item 3): no "X (2)", no two "CLI tool"."""

from __future__ import annotations

from langgraph_topics.keywords.phrases import name_phrase
from langgraph_topics.roles.native.topic_names import distinct_name, thread_name
from langgraph_topics.state.records import StoredMessage, TopicRecord


def _said(*texts: str) -> list[StoredMessage]:
    return [
        {
            "id": f"m{i}",
            "role": ("user", "assistant")[i % 2],
            "content": text,
            "timestamp": f"2023-05-08T13:{i:02d}:00",
        }
        for i, text in enumerate(texts)
    ]


def test_a_taken_name_is_replaced_by_what_tells_the_topic_apart() -> None:
    packaging = _said(
        "My CLI tool needs a wheel for PyPI packaging.",
        "Build the wheel with hatchling and upload it with twine.",
        "Does the PyPI wheel include the CLI entry point?",
    )
    assert distinct_name("CLI tool", packaging, ["Kyoto trip"]) == "CLI tool"
    other = distinct_name("CLI tool", packaging, ["cli TOOL"])
    assert other.casefold() != "cli tool" and "(" not in other
    assert "wheel" in other.lower() or "pypi" in other.lower()


def test_a_name_nothing_tells_apart_takes_the_day_its_topic_began() -> None:
    chatter = _said("Thanks!", "Bye!")
    assert distinct_name("Untitled topic", chatter, ["Untitled topic"]) == (
        "Untitled topic, 8 May 2023"
    )


def test_a_new_topic_is_told_apart_from_the_registered_one_of_its_name() -> None:
    record: TopicRecord = {
        "id": "t1",
        "name": "CLI tool",
        "status": "active",
        "parent_id": None,
        "scores": [],
        "created_at": "2023-05-01T10:00:00",
        "last_active_at": "2023-05-01T10:00:00",
        "message_count": 4,
    }
    briefs = {"t1": "Keywords: cli, argparse\n- user: My CLI tool parses flags with argparse."}
    messages = _said(
        "My CLI tool should read a TOML config file.",
        "Load the config file with tomllib and merge it with the flags.",
        "Where should the TOML config file live?",
    )
    named = thread_name("CLI tool", messages, {"t1": record}, briefs.__getitem__)
    assert named.casefold() != "cli tool"
    assert "config" in named.lower() or "toml" in named.lower()
    assert thread_name("Kyoto trip", messages, {"t1": record}, briefs.__getitem__) == "Kyoto trip"
    assert thread_name("x", messages, {}, briefs.__getitem__, ["X"]) != "x"


def test_siblings_are_named_for_what_differs_between_them() -> None:
    hotels = [
        "Which Kyoto ryokan has a private onsen bath?",
        "Is the kaiseki dinner included at a Kyoto ryokan?",
    ]
    temples = [
        "When should we visit Fushimi Inari in Kyoto?",
        "Is Kinkaku-ji in Kyoto worth the bus ride?",
    ]
    weights = [1.5, 1.5]
    speakers = [True, True]
    assert name_phrase(hotels, weights, speakers, contrast=temples) != name_phrase(
        temples, weights, speakers, contrast=hotels
    )
    # An avoided word may stand beside the key word, never be it.
    assert name_phrase(hotels, weights, speakers, avoid=["Kyoto"]) == "Kyoto ryokan"
    assert name_phrase(hotels, weights, speakers, avoid=["Kyoto ryokan"]) not in (None, "Kyoto")
    taken = name_phrase(hotels, weights, speakers)
    assert taken is not None
    assert name_phrase(hotels, weights, speakers, taken=[taken.upper()]) not in (None, taken)
