"""How the native responder words a reply: dated quotes, courtesies, and "nothing yet".

The native responder is what a user meets when no model is configured, so its replies must
read as a retrieval-only assistant talking, not as a dump of ids: "On 8 May 2023 you asked:
“…”". Its own replies are recognisable by that wording (:func:`is_own_reply`), which is how
later turns keep from quoting them: a reply is never evidence, only what was said is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime

from langgraph_topics.keywords.small_talk import is_small_talk

NOTHING_EN = "I don't have any earlier context on that yet. Could you tell me more?"
NOTHING_ZH = "我们之前的对话里还没有关于这个的内容，能再多说一点吗？"
"""Said only when the window holds nothing relevant. Both are small talk to the splitter
(:mod:`langgraph_topics.keywords.small_talk`), so they never glue subjects together."""

_MONTHS = (
    "January February March April May June July August September October November December"
).split()
"""Month names spelled out here: ``strftime("%B")`` follows the process locale, and a reply
must read the same on every machine."""

_THANKS = re.compile(r"\b(?:thanks?|thx|cheers|appreciated?)\b|谢|感谢", re.IGNORECASE)
_BYE = re.compile(
    r"\b(?:bye|goodbye|later|gotta|run|night|goodnight|soon|cya)\b|再见|拜拜|回见|回头|下次|晚安",
    re.IGNORECASE,
)
_HELLO = re.compile(r"\b(?:hi|hello|hey|hiya|morning|evening)\b|你好|您好|早上好|晚上好", re.I)

_OWN_FRAMES = re.compile(
    r"\b(?:asked|said|answered): “|(?:问过|说过|回答)：「"
    r"|^From our conversation: «|^根据我们之前的对话："
)
"""The wording of this responder's quoting replies (and of its earlier versions' replies,
still stored in older threads): a message that has it is a reply, never evidence."""


@dataclass(frozen=True)
class Quote:
    """One message quoted in a reply."""

    text: str
    speaker: str
    """``"you"`` (the user), ``"I"`` (an earlier answer), or a named speaker's name."""
    day: date | None
    """The day the message was sent, when known."""


def is_own_reply(text: str) -> bool:
    """Whether ``text`` is a reply this responder wrote (a quoting reply, a courtesy, "nothing").

    Quoting one of them again would nest quotes inside quotes turn after turn; the courtesies
    and "nothing yet" replies are small talk and say nothing about a subject either way.
    """
    return bool(_OWN_FRAMES.search(text)) or is_small_talk(text)


def courtesy_reply(question: str, *, chinese: bool) -> str | None:
    """A short reply to thanks, a goodbye or a greeting; None for anything else.

    "Perfect, thanks! Gotta run" deserves "You're welcome, talk soon!", not a search of the
    window; the reply is itself small talk, so the splitter keeps it with the subject it closes.
    """
    if not is_small_talk(question):
        return None
    thanks, bye = bool(_THANKS.search(question)), bool(_BYE.search(question))
    if chinese:
        if thanks or bye:
            return ("不客气！" if thanks else "") + ("回头聊！" if bye else "")
        return "你好！" if _HELLO.search(question) else None
    if thanks and bye:
        return "You're welcome, talk soon!"
    if thanks:
        return "You're welcome!"
    if bye:
        return "Talk soon!"
    return "Hello! What shall we talk about?" if _HELLO.search(question) else None


def day_of(timestamp: str | None) -> date | None:
    """The calendar day of an ISO-8601 time, or None when it is missing or unreadable."""
    if not timestamp:
        return None
    try:
        return datetime.fromisoformat(timestamp).date()
    except ValueError:
        return None


def render_answer(quotes: list[Quote], *, today: date | None, chinese: bool) -> str:
    """The reply quoting ``quotes`` in order, each day named once ("Earlier today" for today)."""
    sentences: list[str] = []
    previous: Quote | None = None
    for quote in quotes:
        same_day = previous is not None and quote.day == previous.day
        lead = None if same_day else _when(quote.day, today, chinese=chinese)
        answer = (
            same_day
            and previous is not None
            and quote.speaker == "I"
            and previous.speaker == "you"
            and _asks(previous.text)
        )
        sentences.append(_sentence(quote, lead, answer=answer, chinese=chinese))
        previous = quote
    return ("" if chinese else " ").join(sentences)


def _asks(text: str) -> bool:
    return text.rstrip().endswith(("?", "？"))


def _when(day: date | None, today: date | None, *, chinese: bool) -> str:
    if day is None:
        return "之前" if chinese else "Earlier"
    if day == today:
        return "今天早些时候" if chinese else "Earlier today"
    if chinese:
        return f"{day.year}年{day.month}月{day.day}日"
    return f"On {day.day} {_MONTHS[day.month - 1]} {day.year}"


def _sentence(quote: Quote, lead: str | None, *, answer: bool, chinese: bool) -> str:
    """One quote with who said it; ``answer``: the earlier answer to the quote before it."""
    text = quote.text
    if chinese:
        who = {"you": "你", "I": "我"}.get(quote.speaker, quote.speaker)
        verb = "回答" if answer else "问过" if _asks(text) else "说过"
        also = "" if lead or answer else "还"
        ending = "" if text.endswith(("。", "！", "？", "?", "!", ".", "…")) else "。"
        return f"{lead or ''}{who}{also}{verb}：「{text}」{ending}"
    verb = "answered" if answer else "asked" if _asks(text) else "said"
    ending = "" if text.endswith((".", "!", "?", "…", "。", "！", "？")) else "."
    if lead:
        return f"{lead} {quote.speaker} {verb}: “{text}”{ending}"
    who = quote.speaker[:1].upper() + quote.speaker[1:]
    return f"{who}{'' if answer else ' also'} {verb}: “{text}”{ending}"
