"""Recall cues (seed 000 §4.7 path 3, §4.8): the user says the assistant forgot, or asks.

A cue is the user thinking the assistant forgot, or asking it to look something up in the
conversation. Two kinds of wording. The fixed phrases of "失忆感知" ("你忘了", "我之前说过",
"we talked about this before"). And explicit look-up requests, read by a small grammar
built from the seed's own example ("帮我找一下上个月讨论的 XX") and its paraphrases: a verb
of looking up or of remembering ("找一下", "查查", "回忆一下", "look up", "dig up",
"remind me") followed, within a short stretch, by a reference to *this* conversation
("我们…讨论的", "之前聊过的", "你推荐的", "what we discussed", "what I told you",
"our chat about"), with or without a time expression, with or without "we". A past marker
of time ("之前", "上个月") joined to a verb of talking is a reference too, so
"之前讨论的酸面包" is a cue on its own.

What the grammar leaves out is left to the index window: looking something up that is not in
the conversation ("帮我找一家餐厅", "look up the weather"), talk that is planned ("let's
discuss the budget", "我们来讨论一下"), memories of one's own ("I remember my childhood"), and
someone else's conversations ("他们上次讨论的"). A false cue costs a deep index search; a
missed one leaves an archived topic out of reach, which is why the phrasings are many.
"""

from __future__ import annotations

import re

_CHINESE_CUES = (
    "你忘了",
    "你忘记",
    "忘了吗",
    "忘记了吗",
    "我之前说过",
    "我之前跟你说过",
    "我之前告诉过",
    "我以前说过",
    "我跟你说过",
    "我告诉过你",
    "我们之前讨论",
    "我们上次讨论",
    "我们之前聊过",
    "我们上次聊",
    "我们聊过",
    "之前提到过",
    "上次说的",
    "之前说的",
    "还记得吗",
    "你还记得",
    "不记得了吗",
    "我们讨论过",
)
_ENGLISH_CUES = re.compile(
    r"\b("
    r"you forgot|you've forgotten|you have forgotten|did you forget|have you forgotten"
    r"|(i|we) (already |have |had )?(told|said|mentioned|discussed|talked about|went over)"
    r" (you |this |that |it )?(before|earlier|already|previously|last time)"
    r"|(i|we) (already |have )?(told you|mentioned)"
    r"|(we|i) talked about (this|that|it)( before| earlier)?"
    r"|we discussed (this|that|it)"
    r"|as i (said|mentioned)( before| earlier)?"
    r"|remember (when|what|that|our)|don't you remember|do you remember"
    r"|last time we|like i said"
    r")\b",
    re.IGNORECASE,
)

# ---------------------------------------------------------------- Chinese look-up requests

_ZH_STOP = r"[^。！？!?；;\n]"
"""Any character inside one clause: a request and its object are said in one breath."""
_ZH_LOOKUP = (
    r"(?:找|查|搜|翻|检索|调出|回顾|回忆|回想|想想|想一想|看看)"
    r"(?:一下|一找|一查|一翻|找|查|翻|看|出来|出|到|回来)?"
)
"""Looking up or remembering: "找一下", "查查", "翻出来", "回忆一下"."""
_ZH_TALK = r"(?:讨论|聊|谈|说|讲|提|交流|沟通|商量|约定|决定|分析)"
"""Talking, deciding together."""
_ZH_DONE = r"(?:过|了|的|到)"
"""The talk is past or named ("讨论过", "聊的"); "讨论一下" (to discuss) is not."""
_ZH_US = r"(?:我们|咱们|咱俩|我俩|我和你|你和我|我跟你|跟你|和你)"
_ZH_NUMBER = r"[\d一二三四五六七八九十两〇零]"
_ZH_PAST = (
    r"(?:之前|以前|上次|上回|那次|那天|先前|早先|早些时候|前几天|前阵子|前段时间|刚才|刚刚"
    r"|昨天|前天|上周|上星期|上礼拜|上个?月|去年|前年|几天前"
    rf"|{_ZH_NUMBER}+个?(?:天|周|星期|礼拜|月|年)前"
    rf"|(?:{_ZH_NUMBER}{{2,4}}年)?{_ZH_NUMBER}{{1,3}}月份?(?:{_ZH_NUMBER}{{1,3}}[号日])?"
    r"|(?:周|星期|礼拜)[一二三四五六日天])"
)
"""A time in the past, as ``date_periods`` reads it (its grammar is the one that dates it)."""
_ZH_OTHERS = r"(?<![他她它们人友事板户师妈爸家])"
"""Not right after someone else ("他之前说的", "他们上次讨论的"): their talk, not ours."""
_ZH_REFERENCE = (
    r"(?:"
    # "我们上个月讨论的", "跟你聊过的": the two of us talking.
    rf"{_ZH_US}{_ZH_STOP}{{0,8}}?{_ZH_TALK}{_ZH_DONE}"
    # "之前讨论的", "上个月我们聊的": a past time, then (us or me or you) talking.
    rf"|{_ZH_OTHERS}{_ZH_PAST}(?:{_ZH_US}|我|你)?(?:一起)?{_ZH_TALK}{_ZH_DONE}"
    # "讨论过的": talk that happened.
    rf"|{_ZH_OTHERS}{_ZH_TALK}过的"
    # "我说过的", "你推荐的": what one of us said.
    rf"|{_ZH_OTHERS}我(?:之前|上次|以前)?(?:跟你|和你|对你)?(?:说|提|讲|问|告诉你)(?:过|的)"
    rf"|{_ZH_OTHERS}你(?:之前|上次|以前)?(?:说|提|讲|推荐|建议|告诉我|给我|发)(?:过|的)"
    r"|(?:聊天|对话|谈话)记录"
    r")"
)
"""A reference to this conversation."""
_ZH_STANDALONE = re.compile(
    # A past time joined to our talk is a request to recall even without a look-up verb.
    rf"{_ZH_OTHERS}{_ZH_PAST}(?:{_ZH_US}|我|你)?(?:一起)?(?:讨论|聊|谈|交流|商量){_ZH_DONE}"
    rf"|{_ZH_US}{_ZH_STOP}{{0,4}}?{_ZH_PAST}{_ZH_STOP}{{0,4}}?{_ZH_TALK}{_ZH_DONE}"
    r"|(?:想不起来|记不清|记不起来|想不起)"
    rf"{_ZH_STOP}{{0,10}}?(?:{_ZH_US}|我|你){_ZH_STOP}{{0,6}}?{_ZH_TALK}{_ZH_DONE}"
)
_ZH_REQUEST = re.compile(
    rf"{_ZH_LOOKUP}{_ZH_STOP}{{0,12}}?{_ZH_REFERENCE}"
    # The object first, the request after it: "我们上次聊的预算，帮我找出来".
    rf"|{_ZH_REFERENCE}[^。！？!?\n]{{0,16}}?(?:帮我|给我|请|麻烦你?)(?:再)?{_ZH_LOOKUP}"
)

# ---------------------------------------------------------------- English look-up requests

_EN_LOOKUP = (
    r"(?:look(?:ing)?\s+(?:it\s+)?up|look\s+(?:back\s+)?(?:at|for|into|through|over)"
    r"|find|search(?:\s+for|\s+through)?|dig\s+(?:up|out)|pull\s+up|bring\s+up|check"
    r"|retrieve|fetch|locate|go\s+back\s+(?:to|over|through)|remind\s+me"
    r"|recall|remember|refresh\s+my\s+memory|tell\s+me\s+again|repeat)"
)
"""Looking up or remembering ("look up", "dig up", "remind me", "recall")."""
_EN_TALKED = (
    r"(?:discussed|talked\s+about|said|covered|went\s+over|gone\s+over|chatted\s+about"
    r"|decided(?:\s+on)?|agreed\s+on|mentioned|told\s+(?:you|me)|suggested|recommended"
    r"|planned|came\s+up\s+with|settled\s+on|figured\s+out|worked\s+out|asked(?:\s+you)?"
    r"|shared|wrote|sent)"
)
_EN_SPEAKER = r"(?:we|i|you|you\s+and\s+i|me\s+and\s+you)"
_EN_REFERENCE = (
    r"(?:"
    # "what we discussed", "the recipe you suggested", "everything I told you".
    r"(?:what|everything|anything|something|whatever|which|where|when|how|why|stuff|things?"
    r"|(?:the|that|those|this)\s+(?:\w+\s+){0,3}?)"
    rf"\s*(?:that\s+)?{_EN_SPEAKER}\s+(?:had\s+|have\s+|'ve\s+|did\s+)?"
    rf"(?:already\s+|just\s+|once\s+)?{_EN_TALKED}"
    # "what did we decide", "what was it we discussed".
    r"|what\s+(?:did|have|had)\s+(?:we|i|you)\s+(?:\w+\s+){0,2}?"
    r"(?:discuss|talk|say|cover|decide|agree|mention|tell|suggest|recommend|plan|chat)"
    # "our chat about", "the earlier discussion", "the conversation we had".
    r"|(?:our|the|that|those)\s+(?:earlier\s+|previous\s+|last\s+|old\s+|past\s+|other\s+)?"
    r"(?:conversations?|discussions?|chats?|talks?)"
    r"(?:\s+(?:about|on|from|we\s+had|history|log)|(?=\s+(?:last|earlier|yesterday)))"
    r"|(?:our|the)\s+(?:chat|conversation)\s+(?:history|log)"
    # "what was discussed before": with no speaker, only with a past marker.
    r"|(?:what|everything|anything)\s+(?:was|were|got)\s+"
    r"(?:discussed|said|decided|mentioned|covered|talked\s+about|agreed)"
    r"(?=(?:\s+\w+){0,6}?\s+(?:before|earlier|previously|last\s+\w+|yesterday|ago|here))"
    r")"
)
"""A reference to this conversation."""
_EN_REQUEST = re.compile(
    # "remind me to" is an errand, not a look-up: the verb must lead to the reference.
    rf"\b{_EN_LOOKUP}\b(?!\s+to\b)(?:\W+\w+){{0,8}}?\W+{_EN_REFERENCE}\b",
    re.IGNORECASE,
)
_EN_STANDALONE = re.compile(
    # "What was that recipe we talked about?": a question about something we said.
    rf"\bwhat\s+(?:was|were|is|'s)\s+(?:that|the|those)\s+(?:\w+\s+){{0,3}}?"
    rf"(?:that\s+)?{_EN_SPEAKER}\s+(?:had\s+)?{_EN_TALKED}\b"
    r"|\b(?:i\s+)?can't\s+(?:remember|recall|find)\s+(?:\w+\s+){0,4}?"
    rf"{_EN_SPEAKER}\s+{_EN_TALKED}\b",
    re.IGNORECASE,
)


def find_lookup_request(text: str) -> str | None:
    """The words of ``text`` asking to look something up in the conversation, or None.

    Chinese or English; never raises on any text. ``"帮我找一下上个月讨论的 XX"`` gives
    ``"找一下上个月讨论的"``; ``"帮我找一家餐厅"`` gives None.
    """
    for pattern in (_ZH_REQUEST, _ZH_STANDALONE, _EN_REQUEST, _EN_STANDALONE):
        match = pattern.search(text)
        if match:
            return match.group(0)
    return None


def find_recall_cue(text: str) -> str | None:
    """The recall cue in ``text`` (Chinese or English), or None.

    A fixed phrase of "失忆感知" or an explicit look-up request (:func:`find_lookup_request`).
    """
    for cue in _CHINESE_CUES:
        if cue in text:
            return cue
    match = _ENGLISH_CUES.search(text)
    if match:
        return match.group(0)
    return find_lookup_request(text)
