"""The native card: facts extracted from the summarised messages, no model involved.

Each fact is found in a message and cites it: subjects are the messages' top keywords, a
decision is a sentence with a decision cue (its reason the clause after a reason cue, or the
question it answers), an unresolved item is an open cue or a question nothing answered, an
entity is a file path, a URL, a code identifier or a quoted name. The card's ``text`` is the
summary the back end already wrote, unchanged; the main window shows it, and the decisions, open
items and files as lines of their own (``prompts/card_lines.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple, TypeVar, cast

from langgraph_topics.keywords import top_keywords
from langgraph_topics.summaries.card import (
    CARD_VERSION,
    DecisionFact,
    EntityFact,
    SummaryCard,
    TopicFact,
    UnresolvedFact,
)

if TYPE_CHECKING:
    from langgraph_topics.state.records import StoredMessage

MAX_TOPICS = 4
MAX_DECISIONS = 6
MAX_UNRESOLVED = 4
MAX_ENTITIES = 8
MAX_CITED = 6
"""Most ids one fact cites (the earliest messages that say it)."""
FACT_CHARS = 200
NO_REASON = {"en": "not stated in the messages", "zh": "消息中未说明"}
"""The ``why`` of a decision whose messages give no reason: the card says so, a prompt need not."""

_SENTENCE_END = re.compile(r"(?<=[。！？!?；;])\s*|\n+|(?<=\.)\s+")
_SPACES = re.compile(r"\s+")
_DECISION = re.compile(
    r"\b(?:decided|decide to|we(?:'ll| will) (?:go with|use)|let's (?:go with|use)|"
    r"going with|chose|choose to|settled on|agreed|switch(?:ed)? to|go with|picked)\b"
    r"|决定|就用|选择了|选了|确定用|确定了|打算用|采用|改成|改为|定了|那就",
    re.IGNORECASE,
)
_REASON = re.compile(
    r"\b(?:because|since|so that|due to|as it|as they)\b|因为|由于|为了|原因是", re.IGNORECASE
)
_OPEN = re.compile(
    r"\b(?:not sure yet|haven't decided|undecided|tbd|todo|open question|still need to|"
    r"to be decided|later decide|figure out later)\b"
    r"|还没决定|还没定|待定|不确定|再看看|回头再|还没想好",
    re.IGNORECASE,
)
# Literal pieces one of which a sentence must hold before the regular expressions above look at
# it: most messages hold none, and a substring test is far cheaper than a long alternation.
_DECISION_HINTS = (
    "decid", "we'll", "we will", "let's", "going with", "chose", "choose", "settled", "agreed",
    "switch", "go with", "picked", "决定", "就用", "选", "确定", "打算用", "采用", "改", "定了",
    "那就",
)  # fmt: skip
_OPEN_HINTS = (
    "not sure", "haven't decided", "undecided", "tbd", "todo", "open question", "still need",
    "to be decided", "later", "还没", "待定", "不确定", "再看看", "回头再",
)  # fmt: skip
_QUESTION = re.compile(r"[?？]\s*$")
_FILE_EXTENSIONS = frozenset(
    "py rs js ts tsx jsx go java kt c h cpp hpp cs rb php swift json jsonl yaml yml toml ini cfg "
    "md txt csv tsv sql sh html css xml lock log".split()
)
_PATH_STARTS = ("/", "~/", "./", "../")
_TRIM = "\"'()[]{}<>,;:!?。，；：！？、「」《》“”‘’"
_URL = re.compile(r"https?://[^\s)>\]\"']+")
_CODE = re.compile(r"`([^`\n]{2,60})`")
_IDENTIFIER = re.compile(r"[a-z]+_[a-z0-9_]+|[a-z]+[A-Z][A-Za-z0-9]+|[A-Z][a-z]+[A-Z]\w+")
_QUOTED = re.compile(r"[「《“]([^」》”\n]{2,30})[」》”]")

TokenCounter = Callable[[str], int]


def _sentences(text: str) -> list[str]:
    parts = (_SPACES.sub(" ", part).strip() for part in _SENTENCE_END.split(text))
    return [part for part in parts if part]


def _hinted(text: str, hints: tuple[str, ...]) -> bool:
    lowered = text.lower()
    return any(hint in lowered for hint in hints)


def _file_like(token: str) -> bool:
    """A path (``src/db/pool.rs``, ``~/notes``) or a file name with a known extension."""
    if token.startswith(_PATH_STARTS) and len(token) > 2:
        return True
    stem, dot, extension = token.rpartition(".")
    return bool(dot and stem and extension.lower() in _FILE_EXTENSIONS)


def _clip(text: str) -> str:
    return text if len(text) <= FACT_CHARS else text[: FACT_CHARS - 1].rstrip() + "…"


def _prose(message: StoredMessage) -> bool:
    return message["role"] in ("user", "assistant") and bool(message["content"].strip())


def _citing(messages: Sequence[StoredMessage], term: str) -> list[str]:
    lowered = term.lower()
    return [m["id"] for m in messages if lowered in m["content"].lower()][:MAX_CITED]


def _topics(messages: Sequence[StoredMessage], name: str) -> list[TopicFact]:
    prose = [m for m in messages if _prose(m)] or list(messages)
    facts: list[TopicFact] = []
    keywords = top_keywords([m["content"] for m in prose], 2 * MAX_TOPICS)
    # Numbers (years, amounts) are details, not subjects.
    for keyword in [k for k in keywords if not k.replace(".", "").isdigit()][:MAX_TOPICS]:
        cited = _citing(prose, keyword)
        if cited:
            facts.append({"name": keyword, "message_ids": cited})
    if not facts and messages:
        facts.append({"name": name, "message_ids": [m["id"] for m in messages[:MAX_CITED]]})
    return facts


def _reason(sentence: str) -> str | None:
    match = _REASON.search(sentence)
    if match is None:
        return None
    reason = sentence[match.start() :].strip(" ,，。.")
    return _clip(reason) if len(reason) > len(match.group(0)) else None


def _decisions(messages: Sequence[StoredMessage], chinese: bool) -> list[DecisionFact]:
    facts: list[DecisionFact] = []
    asked: StoredMessage | None = None
    for message in messages:
        if not _prose(message):
            continue
        if message["role"] == "user" and _QUESTION.search(message["content"].strip()):
            asked = message
        if not _hinted(message["content"], _DECISION_HINTS):
            continue
        sentences = _sentences(message["content"])
        for index, sentence in enumerate(sentences):
            if _DECISION.search(sentence) is None or _QUESTION.search(sentence):
                continue
            cited = [message["id"]]
            why = _reason(sentence)
            if why is None and index + 1 < len(sentences):
                why = _reason(sentences[index + 1])
            if why is None and asked is not None and asked is not message:
                why = ("回应：" if chinese else "in answer to: ") + _clip(asked["content"])
                cited.insert(0, asked["id"])
            if why is None:
                why = NO_REASON["zh" if chinese else "en"]
            facts.append({"what": _clip(sentence), "why": why, "message_ids": cited})
            if len(facts) == MAX_DECISIONS:
                return facts
    return facts


def _unresolved(messages: Sequence[StoredMessage]) -> list[UnresolvedFact]:
    facts: list[UnresolvedFact] = []
    prose = [m for m in messages if _prose(m)]
    for message in prose:
        if not _hinted(message["content"], _OPEN_HINTS):
            continue
        for sentence in _sentences(message["content"]):
            if _OPEN.search(sentence):
                facts.append({"item": _clip(sentence), "message_ids": [message["id"]]})
                break
    # A question the summarised messages never answer is still open.
    if prose and prose[-1]["role"] == "user" and _QUESTION.search(prose[-1]["content"].strip()):
        last = prose[-1]
        if all(last["id"] not in f["message_ids"] for f in facts):
            question = _sentences(last["content"])[-1]
            facts.append({"item": _clip(question), "message_ids": [last["id"]]})
    return facts[-MAX_UNRESOLVED:]


def _entities(messages: Sequence[StoredMessage]) -> list[EntityFact]:
    # Lower-cased name -> (kind, the name as first written, citing ids).
    found: dict[str, tuple[str, str, list[str]]] = {}

    def note(name: str, kind: str, message_id: str) -> None:
        name = name.strip().rstrip(".,;:")
        if len(name) < 2:
            return
        entry = found.setdefault(name.lower(), (kind, name, []))
        if message_id not in entry[2] and len(entry[2]) < MAX_CITED:
            entry[2].append(message_id)

    for message in messages:
        text = message["content"]
        for match in _URL.finditer(text):
            note(match.group(0), "entity", message["id"])
        without_urls = _URL.sub(" ", text) if "://" in text else text
        for pattern in (_CODE, _QUOTED):
            for match in pattern.finditer(without_urls):
                note(match.group(1), "entity", message["id"])
        for raw in without_urls.split():
            token = raw.strip(_TRIM).rstrip(".")
            if len(token) < 2:
                continue
            if _file_like(token):
                note(token, "file", message["id"])
            elif _IDENTIFIER.fullmatch(token):
                note(token, "entity", message["id"])
    ranked = sorted(found.values(), key=lambda entry: (entry[0] != "file", -len(entry[2])))
    return [
        {"name": name, "kind": "file" if kind == "file" else "entity", "message_ids": cited}
        for kind, name, cited in ranked[:MAX_ENTITIES]
    ]


def _is_chinese(messages: Sequence[StoredMessage]) -> bool:
    text = "".join(m["content"] for m in messages[:20])
    chinese = len(re.findall(r"[\u4e00-\u9fff]", text))
    return chinese > 0 and chinese * 3 >= len(re.findall(r"[A-Za-z]", text))


_Fact = TypeVar("_Fact", TopicFact, DecisionFact, UnresolvedFact, EntityFact)


class _Facts(NamedTuple):
    topics: list[TopicFact]
    decisions: list[DecisionFact]
    unresolved: list[UnresolvedFact]
    entities: list[EntityFact]


FACTS_CACHED = 256
"""Cards of recent message runs kept: every turn each topic window makes a card of its quotes,
mostly the same messages as the turn before (about 0.1 ms each, ten topics a turn). A few
turns' cards are the working set: 1,024 kept filling until turn ~5,500 of the soak (129 held at
turn 1,000, 643 at 3,500; issue 41 item 7)."""


@lru_cache(maxsize=FACTS_CACHED)
def _facts(messages: tuple[tuple[str, str, str], ...], name: str) -> _Facts:
    """The facts of messages given as ``(id, role, content)``: all a card's facts read."""
    records = [
        cast("StoredMessage", {"id": i, "role": role, "content": content})
        for i, role, content in messages
    ]
    return _Facts(
        _topics(records, name),
        _decisions(records, _is_chinese(records)),
        _unresolved(records),
        _entities(records),
    )


def _fresh(facts: list[_Fact]) -> list[_Fact]:
    """A copy the caller may change: the cached facts are shared."""
    return [cast(_Fact, {**f, "message_ids": list(f["message_ids"])}) for f in facts]


def native_card(
    messages: Sequence[StoredMessage],
    text: str,
    *,
    name: str,
    count_tokens: TokenCounter,
    summarised: Sequence[StoredMessage] | None = None,
    source_tokens: int | None = None,
) -> SummaryCard:
    """A card of ``messages`` around the summary ``text`` (kept as it is).

    Args:
        messages: The messages the summary was written from, in conversation order; every
            fact cites some of them.
        text: The natural-language summary.
        name: The topic's name (the subject when no keyword stands out).
        count_tokens: How ``tokens_saved`` is counted.
        summarised: The messages ``text`` stands for, when only some of ``messages`` are (a
            topic window's quotes reach the main window verbatim and save nothing); all of
            them by default.
        source_tokens: The tokens of the messages ``text`` stands for, when the caller knows
            them (``summarised`` is then not counted).
    """
    if source_tokens is None:
        covered = messages if summarised is None else summarised
        source_tokens = sum(count_tokens(m["content"]) for m in covered)
    facts = _facts(tuple((m["id"], m["role"], m["content"]) for m in messages), name)
    return {
        "version": CARD_VERSION,
        "text": text,
        "topics": _fresh(facts.topics),
        "decisions": _fresh(facts.decisions),
        "unresolved": _fresh(facts.unresolved),
        "entities": _fresh(facts.entities),
        "tokens_saved": max(0, source_tokens - count_tokens(text)),
        "source": "native",
    }
