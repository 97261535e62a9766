"""Which messages of the window the native responder quotes, and how well each matches.

A match is judged two ways because each fails alone on short chat messages: shared terms
weighed by how specific they are ("sourdough" says more than "better", 深蹲 more than 适合),
and, when an embedder is given, the similarity of meaning (深蹲 and 健身 share no term). A
message is quoted only when one of them is convincing, so a reply never quotes a message of
another subject merely because it shares a common word.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from langgraph_topics.keywords import extract_keywords
from langgraph_topics.keywords.small_talk import (
    CHINESE_SMALL_TALK,
    ENGLISH_SMALL_TALK,
    is_small_talk,
)
from langgraph_topics.keywords.specificity import specificity
from langgraph_topics.roles.native.reply_wording import is_own_reply
from langgraph_topics.roles.native.text import indexed_text
from langgraph_topics.roles.native.vectors import Vector, VectorCache
from langgraph_topics.state.records import StoredMessage

_SHORTENED = re.compile(r"\s*…\[shortened to fit the window;[^\]]*\]")
"""The mark the assembler and the namespace put where a message was cut to fit the window:
what was cut is not in the window, so a quote stops where the text does."""

_TALK_TERMS = frozenset(
    "说过 问过 提过 聊过 讨论 讨论过 talked discussed mentioned said asked remind".split()
)
"""Words about the conversation itself ("我之前说过", "we talked about"): every message could
share them, so they never make a match."""

_MIN_SPECIFIC = 2.0
"""Without an embedder, a message must share terms of at least this specificity in all
(one fairly specific word: "trip" 2.1, "sourdough" 4.2; "better" 1.2 and "small" 1.5 fail)."""
_SIMILAR_ALONE = 0.5
"""A similarity of meaning that is convincing without a shared term."""
_SIMILAR_WITH_TERMS = 0.42
"""With shared terms, the similarity plus ``_TERM_WEIGHT`` × their specificity must reach this."""
_REFERENCED_SIMILAR = 0.35
"""A message a topic window quoted for this question was judged relevant by the memory
already: a lower similarity confirms it."""
_TERM_WEIGHT = 0.05
_TERM_CAP = 5.0
"""Specificity counted at most, so that the pieces of one Chinese term (市盈, 盈率) do not
outweigh the meaning."""
_REFERENCED_BONUS = 0.05
"""Among near-equal matches, a message a topic window quoted for this question comes first."""
_REFERENCED_TERM_BONUS = 1.0
"""The same preference on the scale of specificity (without an embedder)."""


@dataclass(frozen=True)
class Evidence:
    """One message of the window that may be quoted."""

    message: StoredMessage
    text: str
    """Its content without a shortening mark."""
    order: int
    """Its place among the window's evidence (topic quotes first: they are older)."""
    referenced: bool
    """Whether a topic window quoted it for this question."""
    keywords: frozenset[str]


def gather(messages: Sequence[StoredMessage], start: int, *, referenced: bool) -> list[Evidence]:
    """The messages worth quoting, numbered from ``start``.

    What the user, a named speaker or an earlier answer that is not this responder's said;
    never a tool result, a system text or small talk.
    """
    found: list[Evidence] = []
    for offset, message in enumerate(messages):
        if message["role"] not in ("user", "assistant"):
            continue
        text = _SHORTENED.sub("…", message["content"]).strip()
        if not text.strip("… ") or is_small_talk(text):
            continue
        if message["role"] == "assistant" and is_own_reply(text):
            continue
        found.append(
            Evidence(
                message=message,
                text=text,
                order=start + offset,
                referenced=referenced,
                keywords=frozenset(extract_keywords(text)),
            )
        )
    return found


def question_terms(question: str) -> frozenset[str]:
    """The question's terms that can make a match (small talk and talk about talk left out)."""
    return frozenset(
        k
        for k in extract_keywords(question)
        if k not in ENGLISH_SMALL_TALK and k not in CHINESE_SMALL_TALK and k not in _TALK_TERMS
    )


@dataclass(frozen=True)
class Match:
    """How well one piece of evidence answers the question."""

    score: float
    convincing: bool
    """Whether the match alone justifies quoting it (see the module's thresholds)."""
    evidence: Evidence


def rank(
    question: str,
    asking: StoredMessage | None,
    evidence: Sequence[Evidence],
    vectors: VectorCache | None,
    known: Mapping[str, Vector] | None = None,
) -> list[Match]:
    """Every piece of evidence with its match, best first (newer first among equals).

    ``known``: message id → the vector of its ``indexed_text`` (the message index's), used
    for a message whose text here is that text instead of embedding it again.
    """
    terms = question_terms(question)
    if not evidence or not (terms or vectors):
        return []
    similarity = _similarities(question, asking, evidence, vectors, known or {})
    ranked: list[Match] = []
    for item, similar in zip(evidence, similarity, strict=True):
        specific = sum(specificity(k) for k in item.keywords & terms)
        if similar is None:
            bonus = _REFERENCED_TERM_BONUS if item.referenced else 0.0
            ranked.append(Match(specific + bonus, specific >= _MIN_SPECIFIC, item))
            continue
        bonus = _REFERENCED_BONUS if item.referenced else 0.0
        score = similar + _TERM_WEIGHT * min(specific, _TERM_CAP)
        convincing = (
            similar >= _SIMILAR_ALONE
            or (specific > 0 and score >= _SIMILAR_WITH_TERMS)
            or (item.referenced and similar >= _REFERENCED_SIMILAR)
        )
        ranked.append(Match(score + bonus, convincing, item))
    ranked.sort(key=lambda m: (-m.score, -m.evidence.order))
    return ranked


def _similarities(
    question: str,
    asking: StoredMessage | None,
    evidence: Sequence[Evidence],
    vectors: VectorCache | None,
    known: Mapping[str, Vector],
) -> list[float | None]:
    """Cosine of each message with the question (None each without an embedder).

    Keys are (message id, text hash), as in the native topic window's cache. A quoted message
    whose text is what the index embedded takes the index's vector (``known``): a long
    thread's quotes outgrow any cache.
    """
    if vectors is None:
        return [None] * len(evidence)
    asked_id = asking["id"] if asking is not None else "?"
    keyed = [((asked_id, hash(question)), question)]
    indexed: dict[int, Vector] = {}
    for place, item in enumerate(evidence, start=1):
        vector = known.get(item.message["id"])
        if vector is not None and item.text == indexed_text(item.message):
            indexed[place] = vector
        else:
            keyed.append(((item.message["id"], hash(item.text)), item.text))
    embedded = iter(vectors.embed(keyed))
    rows = [next(embedded)]
    rows += [indexed[p] if p in indexed else next(embedded) for p in range(1, len(evidence) + 1)]
    matrix = np.stack(rows)
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = 1.0
    unit = matrix / norms[:, None]
    return [float(s) for s in unit[1:] @ unit[0]]


def answers_of(chosen: Sequence[Evidence], evidence: Sequence[Evidence]) -> list[Evidence]:
    """The earlier answers right after the chosen questions.

    "Where should I stay?" comes with "Stay near Gion": an answer often shares no term with
    the question that asks for it.
    """
    taken = {e.order for e in chosen}
    by_order = {e.order: e for e in evidence}
    answers: list[Evidence] = []
    for item in chosen:
        if item.message["role"] != "user" or item.message.get("name"):
            continue
        following = by_order.get(item.order + 1)
        if (
            following is not None
            and following.order not in taken
            and following.message["role"] == "assistant"
            and not following.message.get("name")
        ):
            answers.append(following)
            taken.add(following.order)
    return answers
