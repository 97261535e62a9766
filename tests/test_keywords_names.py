"""Stems for matching, small talk, and topic names a person would write."""

from __future__ import annotations

import pytest

from langgraph_topics.keywords import extract_keywords
from langgraph_topics.keywords.phrases import name_phrase
from langgraph_topics.keywords.small_talk import is_small_talk
from langgraph_topics.keywords.specificity import specificity
from langgraph_topics.keywords.stemming import match_key, stem
from langgraph_topics.roles.native import NativeBriefWriter
from langgraph_topics.state.records import StoredMessage


def _named(*user_texts: str) -> str | None:
    return name_phrase(user_texts, [1.5] * len(user_texts), [True] * len(user_texts))


def test_stop_words_are_judged_before_plurals_are_folded() -> None:
    assert extract_keywords("We always do it ourselves") == []
    assert extract_keywords("stocks companies") == ["stock", "company"]


def test_porter2_stems_are_match_keys_only() -> None:
    assert stem("planning") == stem("planned") == stem("plans") == "plan"
    assert match_key("Kyoto") == "kyoto"
    assert match_key("股票") == "股票"


@pytest.mark.parametrize(
    "text",
    ["gotta run, thanks!", "好的，谢谢", "Great, thanks! Talk later.", "See you tomorrow, bye!"],
)
def test_greetings_thanks_and_goodbyes_are_small_talk(text: str) -> None:
    assert is_small_talk(text)


@pytest.mark.parametrize(
    "text", ["Thanks for the Kyoto tips!", "谢谢，市盈率怎么算？", "Is it dead?", "市盈率"]
)
def test_a_message_naming_anything_is_not_small_talk(text: str) -> None:
    assert not is_small_talk(text)


def test_rare_words_are_more_specific_than_common_ones() -> None:
    assert specificity("sourdough") > specificity("starter") > specificity("been")
    assert specificity("番茄炒蛋") > specificity("感觉")


def test_names_are_phrases_of_the_users_words() -> None:
    assert _named("I'm planning a trip to Kyoto next April. Where should I stay?") == "Kyoto trip"
    assert (
        _named(
            "Switching gears: my sourdough starter smells like acetone. Is it dead?",
            "How often should I feed the starter if I keep it in the fridge?",
        )
        == "sourdough starter"
    )
    assert _named("我想系统学习股票基本面分析，应该从哪些财务指标开始？", "基本面分析难吗？") == (
        "股票基本面分析"
    )


def test_names_never_show_stop_words_or_stems() -> None:
    name = _named("We always cook it ourselves, always with fresh basil", "Is basil always fresh?")
    assert name is not None
    assert not {"alway", "always", "ourselve", "ourselves"} & set(name.lower().split())
    assert "basil" in name


def test_speakers_and_canned_replies_do_not_name_a_topic() -> None:
    texts = [
        "Hey Mel! I went to a pottery class yesterday.",
        "Thanks Caroline! Pottery sounds fun.",
        "Mel, the pottery teacher said my bowl was great.",
    ]
    # Mel is short for Melanie: a speaker's name, in any form, names no subject.
    name = name_phrase(texts, [1.5, 1.0, 1.5], [True, False, True], people={"Melanie", "Caroline"})
    assert name is not None and "Mel" not in name and "pottery" in name.lower()


def test_nothing_to_name_gives_none_and_the_writer_falls_back_to_the_first_line() -> None:
    assert _named("Thanks!", "bye") is None
    messages: list[StoredMessage] = [{"id": "a", "role": "user", "content": "Thanks!"}]
    assert NativeBriefWriter().derive_name(messages) == "Thanks!"


def test_name_phrase_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="one entry per text"):
        name_phrase(["a"], [1.0, 2.0], [True])
