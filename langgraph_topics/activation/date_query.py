"""Date queries: the user asks what was discussed in a period (seed 000 §4.8).

"What did we talk about in March 2024?", "还记得2024年3月我们聊了什么吗", "remind me what we
discussed last week": an explicit request to recall, so it may reach archived topics, which
normal activation never offers. A message that only holds a date ("my flight is on March 3",
"3月3号我要出差") asks for nothing and is no date query: a query needs both a period
(``date_periods``) and words asking to recall the conversation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from langgraph_topics.activation.date_periods import DatePeriod, find_periods
from langgraph_topics.activation.recall_cues import find_lookup_request

_TALK = (
    r"(?:talk(?:ed)?|chat(?:ted)?|discuss(?:ed)?|sa(?:y|id)|cover(?:ed)?|go(?:ne)? over"
    r"|went over|spoke|speak|mention(?:ed)?|decide(?:d)?|agree(?:d)?|plan(?:ned)?|learn(?:ed|t)?"
    r"|ask(?:ed)?|tell|told)"
)
"""What was said: "what did we *decide*", "what did I *tell* you"."""
_CONVERSE = r"(?:talk(?:ed)?|chat(?:ted)?|discuss(?:ed)?|spoke|speak|mention(?:ed)?|cover(?:ed)?)"
"""Talking itself: "did we *discuss*" (not "did you tell your mother")."""
# What a person says to the assistant about their *own* past conversation with it. A
# statement about others ("I talked to my friend last week"), a greeting ("since we talked")
# and a memory ("I'll always remember our trip last year") are not requests; LoCoMo's
# dialogues between two people are full of them.
_ENGLISH_ASKS = re.compile(
    r"\b(?:"
    rf"what\s+(?:did|have|had)\s+(?:we|i|you)\s+(?:\w+\s+){{0,2}}?{_TALK}"
    r"|what\s+were\s+we\s+(?:talking|chatting|discussing|saying)"
    r"|what\s+(?:topics|subjects)"
    rf"|(?:did|have)\s+(?:we|i)\s+(?:ever\s+|already\s+)?{_CONVERSE}"
    r"|(?<!since\s)we\s+(?:had\s+|have\s+)?(?:talked|chatted|discussed|spoke|covered|went\s+over)"
    r"|i\s+(?:told|mentioned\s+to|asked)\s+you"
    r"|remind\s+me\s+(?:what|about)|recap|recall"
    r"|summari[sz]e\s+(?:what|our|everything)"
    r"|(?:do|don't|can|could)\s+you\s+remember|remember\s+(?:what|when|how)\s+(?:we|i|you)"
    r"|(?:our|that|those)\s+(?:conversations?|chats?|discussions?)"
    r")\b",
    re.IGNORECASE,
)
_CHINESE_ASKS = re.compile(
    # "还记得…吗" asks; "记得3月3号带护照" (remember to bring it) does not.
    r"还记得|记不记得|你记得|是否记得|记得我们|记得咱们|记得[^。！？!?]{0,30}[吗么]"
    # Our conversation ("我们上周讨论的"), not someone else's ("我昨天和朋友聊了很久").
    r"|(?:我们|咱们|我和你|我跟你|你和我|跟你|和你)[^。！？!?]{0,12}"
    r"(?:聊|谈|讨论|交流|沟通|说|讲|提)(?:了|过|的)"
    r"|(?:聊|谈|讨论|交流|说|讲|提)(?:了|过)(?:些)?(?:什么|啥|哪些)"
    r"|回顾一下|总结一下|聊天记录|什么话题|哪些话题"
)


@dataclass(frozen=True)
class DateQuery:
    """A request to recall what was discussed in one or more periods."""

    periods: tuple[DatePeriod, ...]
    asks: str
    """The words that ask to recall ("what did we talk about", "聊了")."""

    def describe(self) -> str:
        """``March 2024 (2024-03-01..2024-03-31)``, one per period."""
        return "; ".join(f"{p.said} ({p.start}..{p.end})" for p in self.periods)


def asks_to_recall(text: str) -> str | None:
    """The words of ``text`` asking to recall the conversation, or None.

    A look-up request asks too (``recall_cues.find_lookup_request``): with a period, the
    seed's own example "帮我找一下上个月讨论的 XX" is a date query as well as a recall cue.
    """
    match = _ENGLISH_ASKS.search(text) or _CHINESE_ASKS.search(text)
    return match.group(0) if match else find_lookup_request(text)


def find_date_query(text: str, today: date) -> DateQuery | None:
    """The date query ``text`` makes, read relative to ``today``; None when it makes none.

    Never raises on any text.
    """
    asks = asks_to_recall(text)
    if asks is None:
        return None
    periods = find_periods(text, today)
    return DateQuery(tuple(periods), asks) if periods else None
