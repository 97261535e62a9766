"""Recall cues ("失忆感知", seed 000 §4.7 path 3): the user thinks the assistant forgot."""

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


def find_recall_cue(text: str) -> str | None:
    """The recall cue in ``text`` (Chinese or English), or None."""
    for cue in _CHINESE_CUES:
        if cue in text:
            return cue
    match = _ENGLISH_CUES.search(text)
    return match.group(0) if match else None
