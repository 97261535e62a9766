"""Changes of state in a message: "we chose X", "let's switch to Y", "we dropped X" (issue 38).

Natively, by rules, in English and Chinese: a sentence that says a choice was made, a switch,
or an abandonment, and the thing it names. Questions ("should we switch to SQLite?"), offers
and suggestions ("you could switch to…", "可以考虑…") and negations ("we won't use X") state
nothing, so they are left out: a theme's timeline lists what was decided, not what was
weighed.

Kinds:

- ``chose``: "we'll use Postgres", "let's go with X", "we decided on X", 决定用 X, 就用 X;
- ``switched``: "switch to SQLite", "move the app to X", "back to Postgres", 改用 X, 换成 X;
- ``dropped``: "we dropped X", "stop using X", "no longer use X", 放弃 X, 不再用 X.
"""

from __future__ import annotations

import re
from typing import Literal, TypedDict

from langgraph_topics.history.terms import words_of
from langgraph_topics.keywords.extraction import is_cjk
from langgraph_topics.keywords.segmentation import chinese_words
from langgraph_topics.roles.native.text import split_sentences

StateKind = Literal["chose", "switched", "dropped"]


class StateSignal(TypedDict):
    """One change of state a message states."""

    kind: StateKind
    object: str
    """What was chosen, switched to or dropped, as written (``SQLite``, ``健身计划``)."""
    message_id: str
    sentence: str
    """The sentence saying it, whole."""


_OBJECT = r"(?P<obj>[^,.;:!?，。；：！？、\n]{1,60})"
_ENGLISH: list[tuple[StateKind, re.Pattern[str]]] = [
    (
        "switched",
        re.compile(
            r"\b(?:switch(?:ing|ed)?|mov(?:e|ing|ed)|migrat(?:e|ing|ed)|chang(?:e|ing|ed)|"
            r"go(?:ing)? back|went back|come back|coming back|came back|revert(?:ing|ed)?|"
            r"return(?:ing|ed)?|back)(?:\s+[\w'-]+){0,3}?\s+(?:to|onto|over to)\s+" + _OBJECT,
            re.I,
        ),
    ),
    (
        "switched",
        re.compile(r"\breplac(?:e|ing|ed)\s+[\w'-]+(?:\s+[\w'-]+)?\s+with\s+" + _OBJECT, re.I),
    ),
    (
        "dropped",
        re.compile(
            r"\b(?:drop(?:ped|ping)?|abandon(?:ed|ing)?|ditch(?:ed|ing)?|scrap(?:ped|ping)?|"
            r"g(?:ive|ave|iving) up(?: on)?|stop(?:ped)? using|no longer us(?:e|ing)|"
            r"get(?:ting)? rid of|got rid of)\s+" + _OBJECT,
            re.I,
        ),
    ),
    (
        "chose",
        re.compile(
            r"\b(?:(?:we|i)(?:'ll| will| shall|'re going to| are going to|'m going to| am "
            r"going to)|let's|let us)\s+(?:just\s+)?(?:use|go with|pick|choose|adopt|stick "
            r"with|stay with|book|buy)\s+" + _OBJECT,
            re.I,
        ),
    ),
    (
        "chose",
        re.compile(
            r"\b(?:we|i)\s+(?:have\s+|'ve\s+)?(?:chose|chosen|picked|decided on|settled on|"
            r"went with|gone with|opted for|agreed on|booked|bought)\s+" + _OBJECT,
            re.I,
        ),
    ),
    (
        "chose",
        re.compile(
            r"\b(?:decided|decide|decision is|plan is|choice is)\s+(?:to\s+)(?:use|go with|"
            r"adopt|keep|take|book|buy)\s+" + _OBJECT,
            re.I,
        ),
    ),
    ("chose", re.compile(r"\b(?:decided on|settled on|opted for)\s+" + _OBJECT, re.I)),
]
_CHINESE_OBJECT = r"\s*(?P<obj>[^，。；：！？、,.;:!?\n]{1,30})"
_CHINESE: list[tuple[StateKind, re.Pattern[str]]] = [
    (
        "switched",
        re.compile(
            r"(?:改用|换成|换用|改成|切换到|切换成|转到|转向|迁移到|迁到|换到|回到|改回|换回|"
            r"用回|还是回到|重新用)" + _CHINESE_OBJECT
        ),
    ),
    ("dropped", re.compile(r"(?:放弃|不再用|不再使用|弃用|停用|不用)了?" + _CHINESE_OBJECT)),
    (
        "chose",
        re.compile(
            r"(?:决定|确定|选定|定下|最终|最后|那就|我们就|就)(?:了)?(?:先)?(?:用|采用|选|选择|"
            r"使用|买|去|报|学|订)" + _CHINESE_OBJECT
        ),
    ),
    ("chose", re.compile(r"(?:决定|选择了|选定了|定了)(?:先)?" + _CHINESE_OBJECT)),
]
_NOT_STATED = re.compile(
    r"\b(?:should|shall we|could|might|would you|what if|whether|maybe|perhaps|consider|"
    r"suggest|recommend|if you|not sure|don't|do not|won't|will not|wouldn't|never|thinking "
    r"about|wondering)\b|要不要|是否|吗|可以考虑|建议|推荐|不要|别|如果|也许|或许|不确定|会不会|"
    r"考虑",
    re.I,
)
_OBJECT_END = re.compile(
    r"(?:^|\s+)(?:for|because|since|after|as|on|in|at|with|instead|then|and|but|so|now|again|too|"
    r"from|to|this|that|which|when|if|rather|anyway|all|it|is|are|was|will|until|by|"
    r"yesterday|today|tomorrow|tonight|later|soon|first|next|last)\b.*$",
    re.I,
)
_LEADING = re.compile(r"^(?:the|a|an|our|my|your|their|its|this|that|some|just)\s+", re.I)
_CHINESE_SKIP = frozenset("先 去 再 用 来 把 了 还是 一下 一个 这个 那个 我们 继续".split())
_CHINESE_END = frozenset(
    "了 吧 的 呢 啊 吗 来 做 作为 当 存 因为 所以 并 和 与 跟 然后 而 就 也 都 去 于".split()
)


def state_signals(message_id: str, text: str) -> list[StateSignal]:
    """The changes of state ``text`` states, in order; each object once per kind."""
    found: list[StateSignal] = []
    seen: set[tuple[str, str]] = set()
    for sentence in split_sentences(text):
        if sentence.rstrip().endswith(("?", "？")) or _NOT_STATED.search(sentence):
            continue
        for kind, pattern in _CHINESE if _mostly_chinese(sentence) else _ENGLISH:
            for match in pattern.finditer(sentence):
                thing = _object(match.group("obj"))
                if not thing or (kind, thing.lower()) in seen:
                    continue
                seen.add((kind, thing.lower()))
                found.append(
                    {"kind": kind, "object": thing, "message_id": message_id, "sentence": sentence}
                )
            if any(s["sentence"] == sentence for s in found):
                break  # the strongest kind a sentence states is its state
    return found


def _mostly_chinese(sentence: str) -> bool:
    cjk = sum(1 for c in sentence if is_cjk(c))
    return cjk * 3 >= sum(1 for c in sentence if c.isalpha())


def _object(raw: str) -> str:
    """The thing a trigger names: a few words, up to a preposition or the clause's end."""
    raw = raw.strip()
    if not raw:
        return ""
    latin = re.match(r"[A-Za-z][A-Za-z0-9+#.'-]*(?:\s+[A-Za-z0-9][A-Za-z0-9+#.'-]*)*", raw)
    if latin and (not is_cjk(raw[0])):
        phrase = _OBJECT_END.sub("", latin.group(0))
        phrase = _LEADING.sub("", phrase).strip(" .'-")
        words = phrase.split()[:3]
        # A thing is named by a content word first ("SQLite", "the old laptop"), never by a
        # verb form or a pronoun ("using my voice", "it", "ya").
        if not words or not words_of(words[0]) or words[0].lower().endswith("ing"):
            return ""
        return " ".join(words)
    kept: list[str] = []
    for word in chinese_words(raw):
        if not kept and (word in _CHINESE_SKIP or not word.strip()):
            continue
        if word in _CHINESE_END or not word.strip() or (kept and not is_cjk(word[0])):
            break
        if not is_cjk(word[0]):
            return word if words_of(word) else ""
        kept.append(word)
        if len(kept) == 2:
            break
    phrase = "".join(kept)
    return phrase if len(phrase) >= 2 and words_of(phrase) else ""
