"""Small talk: greetings, thanks, goodbyes and talk about the conversation itself.

"gotta run, thanks!", "好的，谢谢" or a reply such as "I don't have any earlier context on that
yet, could you tell me more?" say nothing about a subject. Left to the embeddings they look
alike whatever the subject was (a goodbye resembles every other goodbye, in any language), so
they would gather into a topic of their own, or glue unrelated subjects together. The splitter
therefore leaves them with the subject they close, and a message made only of such words is
not allowed to pull a unit towards another topic.
"""

from __future__ import annotations

import re

from langgraph_topics.keywords.extraction import (
    CHINESE_STOP_WORDS,
    ENGLISH_STOP_WORDS,
    is_cjk,
)
from langgraph_topics.keywords.segmentation import chinese_words

ENGLISH_SMALL_TALK: frozenset[str] = frozenset(
    """
    hi hello hey hiya morning evening afternoon night goodnight bye goodbye later soon cya
    thanks thank thx cheers appreciate appreciated welcome glad happy pleasure sorry excuse
    gotta got run running off leave leaving head heading go going talk chat catch see care
    take enjoy luck good great cool nice awesome perfect wonderful amazing excellent lovely
    fantastic brilliant helpful help helped useful ok okay alright right sure yes yeah yep
    yup no nope fine totally absolutely definitely agree exactly indeed haha lol wow oh ah
    ugh hmm anyway meanwhile tomorrow tonight again soon much lot lots very really so
    earlier before context conversation tell more anything else yet question questions
    answer answers remember mind understood understand understood makes sense sounds
    """.split()
)
"""English words of greetings, thanks, goodbyes and talk about the conversation."""

CHINESE_SMALL_TALK: frozenset[str] = frozenset(
    """
    你好 您好 早上好 晚上好 晚安 早安 再见 拜拜 回见 回头 下次 改天 先这样 就这样 先走 走了
    谢谢 多谢 感谢 谢谢你 谢了 不客气 客气 没事 没关系 没问题 好的 好吧 好啊 好呀 行 可以
    嗯 嗯嗯 哈哈 哈哈哈 收到 明白 了解 知道 懂了 太好了 太棒了 真棒 厉害 有帮助 有用 帮助
    加油 祝你 愉快 开心 高兴 辛苦 辛苦了 麻烦 麻烦你 聊 聊天 下次再聊 之前 对话 内容 多说
    一点 告诉 还有 其他 问题 回答 记得 当然 确实 对 是的 嗯呢 哦 啊 呀 吧 呢 了
    """.split()
)
"""Chinese words of greetings, thanks, goodbyes and talk about the conversation."""

_WORD = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[A-Za-z]+(?:'[A-Za-z]+)?|\d+")
_MAX_CHARS = 160
"""Longer messages are never small talk: they have room to say something."""


def is_small_talk(text: str) -> bool:
    """Whether ``text`` is made only of greetings, thanks, goodbyes and conversation talk.

    Args:
        text: One message.

    Returns:
        True for an empty text and for texts such as "Great, thanks, gotta run!" or "好的，谢谢";
        False as soon as one word names something (Kyoto, 股票) or the text is long.
    """
    if len(text) > _MAX_CHARS:
        return False
    for token in _WORD.findall(text):
        if is_cjk(token):
            if not all(_is_chinese_filler(word) for word in chinese_words(token)):
                return False
        elif not _is_english_filler(token):
            return False
    return True


def _is_english_filler(token: str) -> bool:
    word = token.lower().split("'", 1)[0]
    if token.isdigit():
        return False
    return len(word) < 3 or word in ENGLISH_SMALL_TALK or word in ENGLISH_STOP_WORDS


def _is_chinese_filler(word: str) -> bool:
    if not is_cjk(word):
        return True  # punctuation inside the run
    if len(word) == 1 or word in CHINESE_SMALL_TALK or word in CHINESE_STOP_WORDS:
        return True
    # jieba keeps some set phrases whole (谢谢你们, 好的呀): judge them by their parts.
    return all(part in CHINESE_SMALL_TALK or part in CHINESE_STOP_WORDS for part in _halves(word))


def _halves(word: str) -> list[str]:
    if len(word) < 4:
        return [word]
    return [word[:2], word[2:]]


def is_filler_word(word: str) -> bool:
    """Whether one keyword is small talk or a stop word (``wow``, ``amazing``, 谢谢, 的)."""
    return _is_chinese_filler(word) if is_cjk(word) else _is_english_filler(word)


def without_small_talk(text: str) -> str:
    """The words of ``text`` that name something, in order (small talk and stop words left out).

    What two topics' briefs share once greetings and reactions ("Wow, Mel! Amazing!") are
    gone: the review's merge test compares these (seed 000 §4.8 merges subjects, not tone).
    """
    kept: list[str] = []
    for token in _WORD.findall(text):
        if is_cjk(token):
            words = "".join(w for w in chinese_words(token) if not _is_chinese_filler(w))
            if words:
                kept.append(words)
        elif not _is_english_filler(token):
            kept.append(token)
    return " ".join(kept)
