"""The native responder answers from the window's evidence (issue 35 item 2).

What a user meets when no model is configured: dated quotes of what was said, chosen by shared
specific terms and by meaning, never its own earlier replies, and "nothing yet" only when the
window holds nothing relevant.
"""

from __future__ import annotations

import numpy as np
import pytest

from langgraph_topics.keywords.small_talk import is_small_talk
from langgraph_topics.roles.native import NativeResponder
from langgraph_topics.roles.native.reply_wording import NOTHING_EN, NOTHING_ZH, is_own_reply
from langgraph_topics.state.records import AssembledContext, Role, StoredMessage
from langgraph_topics.stores.embeddings import UseEmbedder


def msg(id_: str, role: Role, content: str, when: str | None = None) -> StoredMessage:
    message: StoredMessage = {"id": id_, "role": role, "content": content}
    if when:
        message["timestamp"] = when
    return message


def window(
    messages: list[StoredMessage], referenced: list[StoredMessage] | None = None
) -> AssembledContext:
    referenced = referenced or []
    return {
        "messages": messages,
        "referenced_messages": referenced,
        "message_ids": [m["id"] for m in [*referenced, *messages]],
        "recent_ids": [m["id"] for m in messages],
        "system_prompt": "",
        "tokens": 0,
        "budget": 8000,
        "sections": {"system": 0, "topics": 0, "unsplit": 0, "recent": 0},
        "topic_ids": [],
        "trimmed": [],
    }


@pytest.fixture(scope="module")
def responder() -> NativeResponder:
    return NativeResponder(UseEmbedder())


def answer(responder: NativeResponder, context: AssembledContext) -> str:
    return responder.respond(context, can_activate=False)["text"]


def test_a_quote_of_another_day_names_the_day(responder: NativeResponder) -> None:
    said = msg("k1", "user", "I'm planning a trip to Kyoto next April.", "2023-05-08T13:56:00")
    question = msg("q", "user", "Remind me, when is my Kyoto trip?", "2023-06-01T09:00:00+00:00")
    text = answer(responder, window([question], referenced=[said]))
    assert text == "On 8 May 2023 you said: “I'm planning a trip to Kyoto next April.”"


def test_a_quote_of_today_says_so_and_a_chinese_question_is_answered_in_chinese(
    responder: NativeResponder,
) -> None:
    today = "2024-03-02T10:00:00+00:00"
    said = msg("f1", "user", "最近想开始健身，每周三次力量训练应该怎么安排？", today)
    question = msg("q", "user", "深蹲和硬拉哪个更适合新手先练？", today)
    text = answer(responder, window([said, question]))
    assert text == "今天早些时候你问过：「最近想开始健身，每周三次力量训练应该怎么安排？」"


def test_a_named_speaker_is_named(responder: NativeResponder) -> None:
    said = msg("D1:3", "user", "I went to a LGBTQ support group yesterday.", "2023-05-08T13:56:00")
    said["name"] = "Caroline"
    question = msg("q", "user", "When did Caroline go to the LGBTQ support group?")
    text = answer(responder, window([question], referenced=[said]))
    assert text.startswith("On 8 May 2023 Caroline said: “I went to a LGBTQ support group")


def test_a_question_comes_with_the_answer_it_got(responder: NativeResponder) -> None:
    history = [
        msg("k1", "user", "I'm planning a trip to Kyoto next April. Where should I stay?"),
        msg("k2", "assistant", "Stay near Gion or Higashiyama."),
    ]
    text = answer(responder, window([*history, msg("q", "user", "Which Kyoto area did you say?")]))
    assert text == (
        "Earlier you asked: “I'm planning a trip to Kyoto next April. Where should I stay?” "
        "I answered: “Stay near Gion or Higashiyama.”"
    )


def test_its_own_replies_are_never_evidence(responder: NativeResponder) -> None:
    own = [
        "Earlier today you asked: “Which crate should I use for a small command-line tool?”",
        "From our conversation: «Which crate should I use for a small command-line tool?» (m1)",
        "今天早些时候你问过：「命令行工具用哪个 crate？」",
        NOTHING_EN,
    ]
    chat = [msg("m1", "user", "Which crate should I use for a small command-line tool?")]
    chat += [msg(f"a{i}", "assistant", text) for i, text in enumerate(own)]
    text = answer(responder, window([*chat, msg("q", "user", "Is clap the crate for a CLI tool?")]))
    assert text == ("Earlier you asked: “Which crate should I use for a small command-line tool?”")
    assert all(is_own_reply(reply) for reply in own)


def test_a_common_word_does_not_make_a_match(responder: NativeResponder) -> None:
    stocks = msg("s1", "user", "市盈率和市净率分别适合评估什么类型的公司？")
    kyoto = msg("k1", "user", "Is the Fushimi Inari shrine better early in the morning?")
    question = msg("q", "user", "深蹲和硬拉哪个更适合新手先练？")
    assert answer(responder, window([stocks, question])) == NOTHING_ZH
    question = msg("q", "user", "Is anyhow or thiserror better for error handling?")
    assert answer(responder, window([kyoto, question])) == NOTHING_EN


def test_meaning_matches_without_a_shared_word(responder: NativeResponder) -> None:
    fitness = msg("f1", "user", "最近想开始健身，每周三次力量训练应该怎么安排？")
    stocks = msg("s1", "user", "市盈率和市净率分别适合评估什么类型的公司？")
    question = msg("q", "user", "练完之后肌肉酸痛还能继续练吗？")
    text = answer(responder, window([fitness, stocks, question]))
    assert "健身" in text and "市盈率" not in text


def test_a_message_the_memory_quoted_is_answered_from(responder: NativeResponder) -> None:
    """A topic window judged it relevant: "nothing yet" would be untrue."""
    quoted = msg("b1", "user", "What hydration should a beginner use for a country loaf?")
    question = msg("q", "user", "Anything else I should know before baking on Sunday?")
    assert answer(responder, window([question])) == NOTHING_EN
    text = answer(responder, window([question], referenced=[quoted]))
    assert "country loaf" in text


def test_a_shortened_message_is_quoted_up_to_the_cut(responder: NativeResponder) -> None:
    cut = msg(
        "m1",
        "user",
        "My sourdough starter smells like acetone …[shortened to fit the "
        "window; the full text is kept]",
    )
    question = msg("q", "user", "Is my sourdough starter dead?")
    text = answer(responder, window([cut, question]))
    assert text == "Earlier you said: “My sourdough starter smells like acetone…”"


@pytest.mark.parametrize(
    ("said", "reply"),
    [
        ("Perfect, thanks! Gotta run, talk later.", "You're welcome, talk soon!"),
        ("Thanks a lot!", "You're welcome!"),
        ("好的，谢谢！", "不客气！"),
        ("Hi there!", "Hello! What shall we talk about?"),
    ],
)
def test_thanks_and_goodbyes_get_a_courtesy(
    responder: NativeResponder, said: str, reply: str
) -> None:
    earlier = msg("k1", "user", "What ryokan would you suggest near Gion?")
    assert answer(responder, window([earlier, msg("q", "user", said)])) == reply
    assert is_small_talk(reply), "the splitter keeps it with the subject it closes"


def test_without_an_embedder_specific_shared_terms_decide() -> None:
    plain = NativeResponder()
    loaf = msg("b1", "user", "My loaf comes out dense and flat.")
    shrine = msg("k1", "user", "Is the Fushimi Inari shrine better early in the morning?")
    text = answer(plain, window([loaf, shrine, msg("q", "user", "Is a wetter loaf better?")]))
    assert text == "Earlier you said: “My loaf comes out dense and flat.”"


def test_the_answer_is_deterministic(responder: NativeResponder) -> None:
    history = [
        msg("k1", "user", "I'm planning a trip to Kyoto next April."),
        msg("b1", "user", "My loaf comes out dense and flat."),
        msg("k2", "user", "Should I buy a JR pass for a day trip to Nara?"),
    ]
    context = window([*history, msg("q", "user", "Back to the Kyoto trip: is April busy?")])
    assert len({answer(responder, context) for _ in range(3)}) == 1
    assert len({answer(NativeResponder(UseEmbedder()), context) for _ in range(2)}) == 1


class CountingEmbedder:
    """The default embedder, recording every text it is asked to embed."""

    def __init__(self, inner: UseEmbedder) -> None:
        self.inner = inner
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return self.inner.embed(texts)


def test_quotes_with_indexed_vectors_are_not_embedded_again() -> None:
    """A long thread's quotes outgrow the responder's cache: the index's vectors stand in."""
    inner = UseEmbedder()
    said = msg("k1", "user", "I'm planning a trip to Kyoto next April.", "2023-05-08T13:56:00")
    other = msg("k2", "user", "My sourdough starter finally bubbled.", "2023-05-09T10:00:00")
    question = msg("q", "user", "Remind me, when is my Kyoto trip?", "2023-06-01T09:00:00+00:00")
    context = window([question], referenced=[said, other])
    plain = CountingEmbedder(inner)
    expected = NativeResponder(plain).respond(context, can_activate=False)
    assert {said["content"], other["content"]} <= set(plain.texts)

    counting = CountingEmbedder(inner)
    indexed = {m["id"]: np.asarray(inner.embed([m["content"]])[0], np.float32) for m in (said,)}
    reply = NativeResponder(counting).respond_with_vectors(
        context, can_activate=False, vectors=indexed
    )
    assert reply == expected
    assert said["content"] not in counting.texts  # taken from the index
    assert other["content"] in counting.texts  # the index had none: embedded


def test_a_quote_whose_text_is_not_the_indexed_one_is_embedded() -> None:
    """A named speaker's message is indexed as "Name: text": its vector is not the quote's."""
    inner = UseEmbedder()
    said = msg("k1", "user", "I'm planning a trip to Kyoto next April.", "2023-05-08T13:56:00")
    said["name"] = "Mel"
    question = msg("q", "user", "Remind me, when is my Kyoto trip?", "2023-06-01T09:00:00+00:00")
    counting = CountingEmbedder(inner)
    stale = {"k1": np.zeros(512, np.float32)}
    NativeResponder(counting).respond_with_vectors(
        window([question], referenced=[said]), can_activate=False, vectors=stale
    )
    assert said["content"] in counting.texts
