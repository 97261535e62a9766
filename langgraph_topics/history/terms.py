"""The words a refined turn keeps: what it names, as a person wrote it (issue 38 item 1).

A turn's keywords are its content words with small talk, stop words and vocatives left out:
Latin words of three letters or more in the case they were written (``Postgres``, ``SQLite``),
and jieba's Chinese words of two characters or more (射击, 健身房). Each is compared by its match
key (``keywords.stemming.match_key``: the stem of an English word, a Chinese word as it is), and
shown as written, so a theme is named ``Postgres``, never ``postgr``.

Entities are the words that name one thing: Latin words written with a capital inside a
sentence or with inner capitals or digits (``Postgres``, ``SQLite``, ``GPT4``), and titles
between 《》 or quotes.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from langgraph_topics.keywords.extraction import (
    CHINESE_STOP_WORDS,
    ENGLISH_STOP_WORDS,
    is_cjk,
)
from langgraph_topics.keywords.segmentation import _jieba
from langgraph_topics.keywords.small_talk import is_filler_word
from langgraph_topics.keywords.specificity import specificity
from langgraph_topics.keywords.stemming import match_key

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD = re.compile(rf"[{_CJK}]+|[A-Za-z][A-Za-z0-9+#]*(?:[.'-][A-Za-z0-9]+)*|\d+")
_TITLE = re.compile(r"《([^》]{1,30})》|“([^”]{2,30})”")
_EXTRA_STOPS = frozenset(
    """
    我 你 他 她 它 您 咱 我会 聊聊 朋友 伴侣 谢谢你 你好啊 感觉 觉得 一下 有没有 什么样 这部 那部
    时间 非常 真的 喜欢 有趣 好好 很多 不少 最近 今天 昨天 明天 一天 之后 以后 下次
    i'm i've i'd i'll you're you've we're we've we'll let's that's it's there's don't can't
    also just really maybe pretty bit lots been went gone come came new old yesterday
    tomorrow tonight day days time times year years week weeks month months last next feel
    felt glad hope hoping sounds looks look looking wow
    """.split()
)
"""Words that never name a subject here besides the stop words and small talk (vocatives such
as 朋友 in "你好，朋友", feelings such as 感觉)."""
_NOT_NAMING = frozenset(
    """
    share shares shared sharing photo-sharing recommend recommends recommendation
    recommendations suggest suggests suggestion suggestions advice tip tips inspire inspires
    inspiring inspiration motivate motivates motivation encourage encouraging encouragement
    broaden horizons consult ask asks saw seen heard hear love loves free super best fave
    blast awesome amazing great nice cool interesting reminder remind plans plan thing things
    stuff experience experiences together fam bro buddy dude guys folks
    启发 启示 视野 有所 地方 体验 带给 方面 收获 建议 帮助 分享
    """.split()
)
"""Words that recur across a casual chat without naming what it is about: the reply's advice
and encouragement (recommendations, inspire, 启发, 视野), evaluations (awesome, best), the
dataset's photo marker ("[shares a photo: …]"), vocatives (fam, buddy). They may be a theme's
keyword, never its name."""
_NOT_NAMING_ENDINGS = ("ful", "ous", "less", "able", "ible", "istic", "ical")
"""Endings of English adjectives (beautiful, artistic): they qualify a subject, name none."""
_POSSESSIVE = re.compile(r"['’]s$", re.I)
_SENTENCE_START = re.compile(r"(?:^|[.!?。！？]\s*)([A-Z][a-z]+)")


def words_of(text: str) -> list[str]:
    """The content words of ``text`` as written, in order, repeats kept."""
    found: list[str] = []
    for token in _WORD.findall(text):
        if is_cjk(token[0]):
            found.extend(w for w in naming_words(token) if len(w) >= 2 and _content(w))
        elif token[0].isalpha():
            word = _POSSESSIVE.sub("", token)  # "Pottery's" is pottery
            if len(word) >= 3 and _content(word):
                found.append(word)
        elif token.isdigit() and len(token) >= 3:
            found.append(token)  # years, amounts; "21" or "2" say nothing alone
    return found


_NAMING_TAGS = ("n", "vn", "j", "eng")
"""jieba's part-of-speech tags of words that can name a subject: nouns (people, places,
organisations, other proper nouns), verbal nouns (射击, 健身), abbreviations. Adjectives (很棒),
verbs (提供), idioms and set phrases (今天天气, 为您服务) name none."""
_RARE_VERB = 2.9
"""Specificity from which a verb names an activity (健身 3.0, 烹饪 3.1; 学习 1.6, 尝试 2.7)."""
_POS_LOCK = threading.Lock()
_pos_tokenizer: Any = None


@lru_cache(maxsize=16_384)
def naming_words(run: str) -> tuple[str, ...]:
    """The words of a Chinese run that can name a subject (by jieba's part of speech)."""
    global _pos_tokenizer
    with _POS_LOCK:
        if _pos_tokenizer is None:
            import jieba.posseg

            _pos_tokenizer = jieba.posseg.POSTokenizer(_jieba())
        tagged = list(_pos_tokenizer.cut(run))
    return tuple(
        pair.word
        for pair in tagged
        if is_cjk(pair.word)
        and (
            pair.flag.startswith(_NAMING_TAGS)
            # An activity names a subject when it is no everyday verb (健身, 烹饪; not 学习)
            or (pair.flag == "v" and specificity(pair.word) >= _RARE_VERB)
        )
    )


def names_a_thing(word: str) -> bool:
    """Whether a keyword can name a theme: a noun or a name, as a person would title it.

    Without a part-of-speech model for English, by its form: a word written with capitals
    (``LGBTQ``, ``Postgres``) names one; an adjective's ending (``-ful``, ``-ous``…), a past
    participle (``learned``, ``inspired``) or an adverb (``-ly``) does not, nor the words a
    chat says about everything (``_NOT_NAMING``). Chinese keywords are nouns and activities
    already (``naming_words``), less the advice the replies repeat (启发, 视野).
    """
    if word in _NOT_NAMING:
        return False
    if is_cjk(word[:1]):
        return True
    if any(c.isupper() for c in word[1:]) or word.isupper():
        return True
    lowered = word.lower()
    if lowered in _NOT_NAMING:
        return False
    if len(lowered) >= 6 and lowered.endswith(("ed", "ly")):
        return False
    return not (len(lowered) >= 7 and lowered.endswith(_NOT_NAMING_ENDINGS))


def _content(word: str) -> bool:
    lowered = word.lower()
    if lowered in _EXTRA_STOPS or word in _EXTRA_STOPS:
        return False
    if is_cjk(word):
        return word not in CHINESE_STOP_WORDS and not is_filler_word(word)
    return lowered not in ENGLISH_STOP_WORDS and not is_filler_word(lowered)


def key_of(word: str) -> str:
    """What a word is compared by: its stem lower-cased, a Chinese word as it is."""
    return match_key(word.lower()) if not is_cjk(word) else word


def ranked_keywords(texts: Sequence[str], limit: int, weights: Sequence[float] = ()) -> list[str]:
    """The ``limit`` words that best say what ``texts`` are about, as written, best first.

    A word scores its specificity (rarer in general use names a subject better) times how
    often the texts use it (weighted per text), so "Postgres" outranks "database" and both
    outrank "thing". Each match key appears once, under its most frequent written form.
    """
    score: dict[str, float] = {}
    forms: dict[str, Counter[str]] = {}
    first: dict[str, int] = {}
    for index, text in enumerate(texts):
        weight = weights[index] if index < len(weights) else 1.0
        for word in words_of(text):
            key = key_of(word)
            score[key] = score.get(key, 0.0) + weight
            forms.setdefault(key, Counter())[word] += 1
            first.setdefault(key, len(first))
    ranked = sorted(
        score,
        key=lambda k: (-score[k] * specificity(_lookup_form(forms[k])), first[k]),
    )
    return [forms[key].most_common(1)[0][0] for key in ranked[:limit]]


def _lookup_form(forms: Counter[str]) -> str:
    form = forms.most_common(1)[0][0]
    return form if is_cjk(form) else form.lower()


def entities_of(texts: Iterable[str], limit: int = 8) -> list[str]:
    """Names of single things in ``texts``: capitalised words mid-sentence, titles, each once."""
    found: dict[str, None] = {}
    for text in texts:
        for match in _TITLE.finditer(text):
            title = (match.group(1) or match.group(2) or "").strip()
            if title:
                found.setdefault(title, None)
        starts = {m.start(1) for m in _SENTENCE_START.finditer(text)}
        for match in _WORD.finditer(text):
            token = match.group(0)
            if is_cjk(token[0]) or token.isdigit() or len(token) < 2 or not _content(token):
                continue
            inner = any(c.isupper() for c in token[1:]) or any(c.isdigit() for c in token)
            capital = token[0].isupper() and match.start() not in starts
            if (inner or capital) and token.lower() not in ENGLISH_STOP_WORDS:
                found.setdefault(token, None)
    return list(found)[:limit]
