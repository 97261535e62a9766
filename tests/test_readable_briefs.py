"""Briefs as people read them: what a topic is about, without greetings, reactions or names."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import DATA

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.datasets import load_locomo
from langgraph_topics.keywords.extraction import ENGLISH_STOP_WORDS
from langgraph_topics.keywords.small_talk import ENGLISH_SMALL_TALK
from langgraph_topics.memory import TopicSummary
from langgraph_topics.nodes.assemble import brief_line
from langgraph_topics.summaries.readable_briefs import first_readable_line, readable_brief

PEOPLE = ("Caroline", "Melanie")

STORED = """Keywords: caroline, kid, support, mel, painting, wow, adoption, loving
- user: Hey Mel!
- assistant: Thanks, Caroline!
- user: I went to a LGBTQ support group yesterday and it was so powerful.
- assistant: Wow, that's cool, Caroline!
- user: That charity race sounds great, Mel!
- user: Wow, Mel, I'm so stoked for you that art is helping you express yourself!
- assistant: That photo is great!
- user: [shares a photo: a photo of a family posing for a picture in a yard]
- user: Researching adoption agencies — it's been a dream to give a loving home to kids."""


def test_greetings_reactions_and_names_leave_the_brief() -> None:
    assert readable_brief(STORED, PEOPLE).split("\n") == [
        "Keywords: kid, support, painting, adoption, loving",
        "- user: I went to a LGBTQ support group yesterday and it was so powerful.",
        "- user: That charity race sounds great!",
        "- user: I'm so stoked for you that art is helping you express yourself!",
        "- user: [shares a photo: a photo of a family posing for a picture in a yard]",
        "- user: Researching adoption agencies — it's been a dream to give a loving home to kids.",
    ]


def test_what_is_kept_reads_as_it_was_written() -> None:
    stored = (
        "- user: Wow, Mel — version 3.5 of the app is out, thanks!\n- user: iPhone 15 arrived, Mel."
    )
    assert readable_brief(stored, PEOPLE).split("\n") == [
        "- user: Version 3.5 of the app is out!",
        "- user: iPhone 15 arrived.",
    ]


def test_without_the_speakers_a_name_left_alone_after_a_greeting_still_goes() -> None:
    readable = readable_brief("- user: Wow, Mel!\n- user: Who supports you, Mel?")
    # Unknown speakers: "Mel" after "Wow" is an address; in a question it may be its subject.
    assert readable == "- user: Who supports you, Mel?"


def test_chinese_small_talk_clauses_go_and_the_subject_stays() -> None:
    stored = "\n".join(
        [
            "Keywords: 京都, 谢谢, 樱花",
            "- user: 好的，谢谢！",
            "- user: 我想去京都看樱花，谢谢！",
            "- assistant: 太棒了！",
        ]
    )
    assert readable_brief(stored) == "Keywords: 京都, 樱花\n- user: 我想去京都看樱花！"


def test_a_writers_prose_loses_only_sentences_that_say_nothing() -> None:
    stored = "Great, thanks! The user plans a Kyoto trip in April and wants ryokan advice."
    assert readable_brief(stored) == (
        "The user plans a Kyoto trip in April and wants ryokan advice."
    )


def test_a_brief_that_says_something_everywhere_is_unchanged() -> None:
    stored = "Keywords: kyoto, ryokan\n- user: I'm planning a trip to Kyoto next April."
    assert readable_brief(stored, PEOPLE) == stored


def test_a_topic_block_shows_the_first_readable_line() -> None:
    assert brief_line(STORED) == "Keywords: caroline, kid, support, mel, painting, adoption, loving"
    only_small_talk = "Keywords: wow, thanks\n- user: Hey Mel!\n- user: The Kyoto ryokan is booked."
    assert brief_line(only_small_talk) == "- user: The Kyoto ryokan is booked."
    assert first_readable_line(STORED, PEOPLE) == readable_brief(STORED, PEOPLE).split("\n")[0]


# The acceptance test of issue 36 (item 3), with the package's own small-talk list.

_CLAUSE = re.compile(r"[,;:!?.—–]+|\s-\s")
_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
_SPEAKER_WORDS = {"caroline", "melanie", "mel"}


def _says_nothing(clause: str) -> bool:
    """Every word is on the small-talk or stop-word list, or a speaker's name."""
    words = [w.lower().split("'")[0] for w in _WORD.findall(clause)]
    return bool(words) and all(
        len(w) < 3 or w in ENGLISH_SMALL_TALK or w in ENGLISH_STOP_WORDS or w in _SPEAKER_WORDS
        for w in words
    )


def _small_talk_in(name: str, brief: str) -> list[str]:
    """The small-talk items of a topic: words of its name, keywords, clauses of its quotes."""
    found = [w for w in _WORD.findall(name) if w.lower() in ENGLISH_SMALL_TALK]
    for line in brief.split("\n"):
        if line.startswith("Keywords: "):
            keywords = line.removeprefix("Keywords: ").split(", ")
            found += [k for k in keywords if k in ENGLISH_SMALL_TALK or k in _SPEAKER_WORDS]
        elif line.startswith("- ") and not line.split(": ", 1)[-1].startswith("["):
            said = line.split(": ", 1)[-1]
            found += [c for c in _CLAUSE.split(said) if _says_nothing(c)]
    return found


@pytest.fixture(scope="module")
def conv26_start(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TopicMemory]:
    conversation = load_locomo(DATA / "locomo" / "conv-26.json")[0]
    data_dir: Path = tmp_path_factory.mktemp("conv26-start")
    with TopicMemory(settings=Settings(data_dir=data_dir, budget_tokens=1500)) as memory:
        memory.import_messages("conv-26", conversation.messages[:200])
        yield memory


def test_conv26_topics_are_named_and_briefed_without_small_talk(
    conv26_start: TopicMemory,
) -> None:
    topics: list[TopicSummary] = conv26_start.topics("conv-26")
    assert len(topics) >= 2
    for topic in topics:
        assert _small_talk_in(topic["name"], topic["brief"]) == [], topic["name"]
        assert topic["brief"].count("\n- ") >= 2, "the brief still quotes what was said"
        assert topic.get("brief_card", {"text": topic["brief"]})["text"] == topic["brief"]


def test_conv26_stored_briefs_stay_the_splitters_fingerprint(conv26_start: TopicMemory) -> None:
    # The splitter and the topic index match new messages against the stored text: it keeps
    # the sentences as they were said, and what people read is derived from it.
    store = conv26_start.services.stores("conv-26").topic_store
    stored = [store.meta(topic_id) for topic_id in store.topic_ids()]
    assert sum(len(_small_talk_in("", meta["brief"])) for meta in stored) > 20
    for meta in stored:
        # What is read is the stored text with parts left out: no word of its own.
        shown = readable_brief(meta["brief"], PEOPLE)
        assert set(_WORD.findall(shown.lower())) <= set(_WORD.findall(meta["brief"].lower()))


def test_an_archived_topic_is_listed_with_its_readable_brief(conv26_start: TopicMemory) -> None:
    # Runs last: it archives a topic of the shared import.
    largest = max(conv26_start.topics("conv-26"), key=lambda t: t["message_count"])
    assert conv26_start.archive("conv-26", largest["id"]) == "archived"
    [entry] = conv26_start.archived("conv-26")
    assert entry["brief"] == largest["brief"] == entry["summary"]["text"]
    assert _small_talk_in(entry["name"], entry["brief"]) == []
    store = conv26_start.services.stores("conv-26").topic_store
    kept = store.archive_entry(largest["id"])  # type: ignore[attr-defined]
    assert kept is not None and _small_talk_in("", kept["brief"]) != []
