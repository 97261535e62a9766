"""Topic names a person would write: a short phrase of the topic's own words.

A name grows around the topic's key word. That is the content word its messages use most (the
user's words and the opening message counting more), weighted by how specific the word is in
general use (:mod:`~langgraph_topics.keywords.specificity`: "sourdough" names a subject, "been"
does not). The phrase is taken from the sentence where the user first said it: the key word,
its recurring neighbours, and one modifier before it (English and Chinese noun phrases put the
head last: *sourdough* starter, *股票*基本面); "trip to Kyoto" becomes "Kyoto trip". Words are
matched by their stems (``planning`` meets ``plans``), but the name keeps them as they were
written, so it never shows a broken stem.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from langgraph_topics.keywords.extraction import CHINESE_STOP_WORDS, ENGLISH_STOP_WORDS, is_cjk
from langgraph_topics.keywords.segmentation import chinese_words
from langgraph_topics.keywords.small_talk import (
    CHINESE_SMALL_TALK,
    ENGLISH_SMALL_TALK,
    is_small_talk,
)
from langgraph_topics.keywords.specificity import specificity
from langgraph_topics.keywords.stemming import match_key

NAME_FILLERS: frozenset[str] = frozenset(
    """
    next last best better worse worst early earlier late later near far new old first second
    third suggest suggested suggestion recommend recommended recommendation plan planning
    planned start started starting begin beginning try trying tried ask asking asked wonder
    wondering mean meaning question idea ideas option options tip tips advice difference
    differ different similar simple simply actually exactly probably usually basically
    instead also else least enough whole part kind type types example examples stuff
    switching switch gear gears topic back inspiring inspired interesting favorite share
    shared sharing
    favourite fun amazing been being tough
    """.split()
)
"""English words that describe the asking rather than the subject; never part of a name."""

CHINESE_NAME_FILLERS: frozenset[str] = frozenset(
    """
    应该 怎么办 哪些 哪个 适合 需要 关注 区别 一定 分别 最好 主要 一般 先练 开始 最近 想要
    不错 挺不错 尝试 喜欢 感觉 觉得 东西 时间 有趣 好玩 特别 真的
    """.split()
)
"""Chinese words that describe the asking rather than the subject; never part of a name."""

_FILLER_STEMS = frozenset(match_key(word) for word in NAME_FILLERS)
_TOKEN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[A-Za-z][A-Za-z'’-]*|\S")
_CLAUSE_END = re.compile(r"[。！？!?；;，,：:\n]|(?<=[A-Za-z])\.\s")
_INVERTING = frozenset({"to", "in", "around", "across", "through"})
"""``trip to Kyoto`` → ``Kyoto trip``: prepositions after which a proper noun names the place."""
_QUOTED = re.compile(r"«[^»]*»|「[^」]*」")
"""Quoted speech (a reply citing the user); titles in 《》 or "" stay, they name things."""
_CHINESE_JOINER = "的"
_OPENING_WEIGHT = 2.0
_MAX_WORDS = 3
_MAX_CHINESE_CHARS = 10


@dataclass(frozen=True)
class _Word:
    surface: str
    key: str | None
    """Match key of a content word; None for anything a name cannot hold."""
    chinese: bool
    spaced: bool = True
    """Whether a space came before it in the text (a name keeps the text's spacing)."""


def name_phrase(
    texts: Sequence[str],
    weights: Sequence[float],
    speakers: Sequence[bool],
    *,
    people: Collection[str] = (),
    contrast: Sequence[str] = (),
    avoid: Collection[str] = (),
    taken: Collection[str] = (),
) -> str | None:
    """Return a short name for a topic made of ``texts``, or None when they name nothing.

    Args:
        texts: The topic's message texts, in order.
        weights: One weight per text (e.g. 1.5 for the user's, 1.0 for the assistant's).
        speakers: One flag per text: whether the name may quote it (e.g. the user's texts);
            when no text is flagged, all of them may.
        people: Names of the speakers: they recur in every subject ("Hey Mel!"), so they
            never name one.
        contrast: Texts of the topics this one is told apart from (its sibling subtopics, a
            topic of the same name): a word counts by how much more this topic uses it.
        avoid: Names whose words may not be the new name's key word (the parent's, the name
            this one would repeat); they may still stand beside it ("refactor tests").
        taken: Names the result may not be (compared without case); the next best phrase is
            taken instead.
    """
    if not (len(texts) == len(weights) == len(speakers)):
        raise ValueError("texts, weights and speakers must have one entry per text")
    excluded = frozenset(part.lower() for person in people for part in person.split())
    weight_of: dict[str, float] = {}
    texts_of: dict[str, int] = {}
    seen: set[str] = set()
    clauses: list[tuple[Sequence[_Word], bool]] = []  # (words, from the opening text)
    quotable = any(speakers)
    for said, weight, speaker in zip(texts, weights, speakers, strict=True):
        # A quote says no more than what it quotes, and a canned reply said ten times says no
        # more than once.
        text = _QUOTED.sub(" ", said)
        if text in seen or is_small_talk(text):
            continue
        seen.add(text)
        keys = {w.key for clause in _clauses(text, excluded) for w in clause if w.key}
        opens = (speaker or not quotable) and not clauses
        for key in keys:
            # The opening message usually states the subject ("my sourdough starter …"); what
            # follows goes into its details (loaf, hydration), so its words count double.
            weight_of[key] = weight_of.get(key, 0.0) + weight * (_OPENING_WEIGHT if opens else 1)
            texts_of[key] = texts_of.get(key, 0) + 1
        if speaker or not quotable:
            opening = not clauses
            clauses.extend((clause, opening) for clause in _clauses(text, excluded))
    if contrast:
        _contrast(weight_of, texts_of, len(seen), contrast, excluded)
    banned = _keys_of(avoid, excluded)
    candidates: list[tuple[tuple[float, int, int, int], Sequence[_Word], int]] = []
    order = 0
    for clause, opening in clauses:
        for position, word in enumerate(clause):
            if word.key is None or word.key in banned:
                continue
            # Among equals, the opening text's word, then a phrase's last word (its head:
            # 基本面*分析*, sourdough *starter*), then the earliest.
            ends = position + 1 == len(clause) or clause[position + 1].key is None
            score = round(weight_of[word.key] * specificity(word.surface), 6)
            rank = (score, 1 if opening else 0, 1 if ends else 0, -order)
            order += 1
            candidates.append((rank, clause, position))
    used = {name.casefold() for name in taken}
    tried: set[str] = set()
    for _, clause, position in sorted(candidates, key=lambda c: c[0], reverse=True):
        if clause[position].key in tried:
            continue  # the same key word grows the same phrase wherever it stands
        phrase = _phrase(clause, position, texts_of)
        if phrase.casefold() not in used:
            return phrase
        tried.add(clause[position].key or "")
    return None


def _contrast(
    weight_of: dict[str, float],
    texts_of: dict[str, int],
    own: int,
    contrast: Sequence[str],
    excluded: frozenset[str],
) -> None:
    """Weigh each key word by its share of this topic's use against the contrasted topics'.

    The factor is ``(p / (p + q))²`` for shares p (of this topic's texts) and q (of the others'):
    1 for a word only this topic uses, 1/4 for one both use alike, so a subtopic is named for
    what tells it from its siblings rather than for the subject they share.
    """
    others: dict[str, int] = {}
    for text in contrast:
        for key in {w.key for clause in _clauses(_QUOTED.sub(" ", text), excluded) for w in clause}:
            if key:
                others[key] = others.get(key, 0) + 1
    for key in weight_of:
        mine = texts_of[key] / max(1, own)
        theirs = others.get(key, 0) / len(contrast)
        weight_of[key] *= (mine / (mine + theirs)) ** 2


def _keys_of(names: Collection[str], excluded: frozenset[str]) -> frozenset[str]:
    return frozenset(
        w.key for name in names for clause in _clauses(name, excluded) for w in clause if w.key
    )


# 5 to 15 KB an entry, and a name is derived once per new topic: a few splits' worth is kept
# (16,384 entries grew by the message over a long thread, issue 41 item 7).
@lru_cache(maxsize=1024)
def _clauses(text: str, excluded: frozenset[str]) -> tuple[tuple[_Word, ...], ...]:
    # Cached: a topic's brief is rewritten, and its name looked for, after every split.
    clauses: list[tuple[_Word, ...]] = []
    for part in _CLAUSE_END.split(text):
        words: list[_Word] = []
        for match in _TOKEN.finditer(part):
            token = match.group()
            spaced = match.start() > 0 and part[match.start() - 1].isspace()
            if is_cjk(token):
                for index, word in enumerate(chinese_words(token)):
                    words.append(replace(_chinese_word(word), spaced=spaced and index == 0))
            else:
                words.append(replace(_english_word(token), spaced=spaced))
        if words:
            clauses.append(tuple(replace(w, key=None) if _names(w, excluded) else w for w in words))
    return tuple(clauses)


def _names(word: _Word, people: frozenset[str]) -> bool:
    """Whether a word is one of the speakers' names, or its short form (Mel for Melanie)."""
    if word.key is None or not people:
        return False
    lowered = word.surface.lower()
    if lowered in people:
        return True
    short = not word.chinese and word.surface[0].isupper() and len(lowered) >= 3
    return short and any(person.startswith(lowered) for person in people)


def _english_word(token: str) -> _Word:
    lowered = token.lower()
    content = (
        token.isalpha()
        and (len(token) >= 3 or (len(token) >= 2 and token.isupper()))
        and lowered not in ENGLISH_STOP_WORDS
        and lowered not in ENGLISH_SMALL_TALK
        and lowered not in NAME_FILLERS
        and match_key(lowered) not in _FILLER_STEMS
    )
    return _Word(token, match_key(lowered) if content else None, False)


def _chinese_word(word: str) -> _Word:
    content = (
        len(word) >= 2
        and word not in CHINESE_STOP_WORDS
        and word not in CHINESE_SMALL_TALK
        and word not in CHINESE_NAME_FILLERS
    )
    return _Word(word, word if content else None, True)


def _phrase(words: Sequence[_Word], head: int, texts_of: dict[str, int]) -> str:
    """Grow a phrase around ``words[head]``: recurring neighbours, then one modifier before."""

    def recurs(index: int) -> bool:
        key = words[index].key
        return key is not None and texts_of.get(key, 0) >= 2

    start, end = head, head + 1
    # Rightwards only over recurring words (braised → pork belly): a one-off word after the
    # key word, as in "starter smells", starts what is said about it.
    while end < len(words) and recurs(end) and _fits(words[start : end + 1]):
        end += 1
    while start > 0 and recurs(start - 1) and _fits(words[start - 1 : end]):
        start -= 1
    if start > 0 and words[start - 1].key is not None and _fits(words[start - 1 : end]):
        start -= 1
    elif (
        start > 1
        and words[start].chinese
        and words[start - 1].surface == _CHINESE_JOINER
        and words[start - 2].key is not None
        and _fits(words[start - 2 : end])
    ):
        start -= 2  # 美股的估值: the joiner keeps its modifier
    if end - start == 1:
        inverted = _inverted(words, head)
        if inverted:
            return inverted
    return _join(words[start:end])


def _inverted(words: Sequence[_Word], head: int) -> str | None:
    """``trip to Kyoto`` → ``Kyoto trip``, whether the head is the trip or Kyoto."""
    if words[head].chinese:
        return None
    for thing, preposition, place in ((head, head + 1, head + 2), (head - 2, head - 1, head)):
        if thing < 0 or place >= len(words):
            continue
        if (
            words[preposition].surface.lower() in _INVERTING
            and words[thing].key
            and words[place].key
            and words[place].surface[0].isupper()
        ):
            return f"{words[place].surface} {words[thing].surface}"
    return None


def _fits(words: Sequence[_Word]) -> bool:
    if any(word.chinese for word in words):
        return len(_join(words)) <= _MAX_CHINESE_CHARS
    return len(words) <= _MAX_WORDS


def _join(words: Sequence[_Word]) -> str:
    return "".join(
        (" " if word.spaced and index else "") + word.surface for index, word in enumerate(words)
    )
