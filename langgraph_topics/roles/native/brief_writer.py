"""Native brief writer: a keyword name and an extractive ~1 KB brief (seed 000 §4.6).

The brief is the topic's activation fingerprint: the index embeds it and the router matches
keywords against it. So it opens with the topic's keywords and then quotes the sentences that
best represent the topic, in the order they were said.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from langgraph_topics.keywords import extract_keywords, top_keywords
from langgraph_topics.keywords.phrases import name_phrase
from langgraph_topics.roles.native.text import (
    clip,
    indexed_text,
    is_chinese,
    message_text,
    split_sentences,
    truncate_utf8,
    utf8_len,
)
from langgraph_topics.roles.native.vectors import Vector, VectorCache, centroid
from langgraph_topics.roles.protocols import TopicInfo
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.protocols import Embedder

_USER_WEIGHT = 1.5
"""The user's words define a topic more than the assistant's, which restate and elaborate."""
_SENTENCE_CHARS = 200
_EMBED_CANDIDATES = 48
"""With an embedder, only this many keyword-dense sentences are embedded: it bounds the cost of
rewriting the brief of a large topic after every split."""
_NAME_CHARS = 24
_PROSE_ROLES = ("user", "assistant")

StoredVectors = Callable[[Sequence[str]], Mapping[str, Vector]]
"""Message ids → the message index's vectors of their ``indexed_text`` (ids it lacks left out)."""


@dataclass(frozen=True)
class _Sentence:
    order: tuple[int, int]
    role: str
    text: str
    score: float
    whole_of: str | None = None
    """The id of the message this sentence is the whole ``indexed_text`` of (None: a part)."""


class NativeBriefWriter:
    """Names a topic after its keywords and quotes its most representative sentences.

    Args:
        embedder: When given, sentences near the topic's centroid are preferred; without it the
            choice rests on keyword density alone (the splitter uses that to stay at one
            embedding call per split).
        brief_bytes: Hard limit of the brief in UTF-8 bytes.
        brief_keywords: How many keywords the brief's first line lists.
    """

    def __init__(
        self,
        embedder: Embedder | None = None,
        *,
        brief_bytes: int = 1024,
        brief_keywords: int = 10,
    ) -> None:
        self.embedder = embedder
        # A brief is rewritten after every split that touches its topic, and most of its
        # candidate sentences are the same as last time: cache their vectors by text.
        self.sentence_cache = VectorCache(embedder) if embedder is not None else None
        self.brief_bytes = brief_bytes
        self.brief_keywords = brief_keywords

    def write(self, topic: TopicInfo, messages: Sequence[StoredMessage]) -> tuple[str, str]:
        """Return ``(name, brief)`` for a topic holding ``messages``.

        A topic keeps a name it already has, so that names stay stable for the user as the topic
        grows; only an empty name is derived from the keywords.
        """
        name = topic["name"].strip() or self.derive_name(messages)
        return name, self.compose_brief(messages)

    def write_with_vectors(
        self,
        topic: TopicInfo,
        messages: Sequence[StoredMessage],
        *,
        stored_vectors: StoredVectors,
    ) -> tuple[str, str]:
        """Like :meth:`write`, a sentence that is a whole indexed message taking its vector.

        A short message is one sentence, and its sentence is then the text the message index
        embedded when the message was split: the index's vector (float16 precision) saves
        embedding it again. A brief writer's own cache cannot hold a long thread's candidate
        sentences: a split embedded 48 per touched topic, 1.3 s of a split at 5,800 turns.
        """
        name = topic["name"].strip() or self.derive_name(messages)
        return name, self.compose_brief(messages, stored_vectors)

    def derive_name(self, messages: Sequence[StoredMessage]) -> str:
        """A short phrase of the topic's own words (``Kyoto trip``, ``基本面分析``).

        See :func:`~langgraph_topics.keywords.phrases.name_phrase`: built around the word most
        of the topic's messages use, quoted from the user's messages; the first line of the
        topic when no word qualifies.
        """
        prose = [m for m in messages if m["role"] in _PROSE_ROLES] or list(messages)
        texts = [message_text(m) for m in prose]
        weights = [_USER_WEIGHT if m["role"] == "user" else 1.0 for m in prose]
        people = {m["name"] for m in messages if m.get("name")}
        phrase = name_phrase(texts, weights, [m["role"] == "user" for m in prose], people=people)
        if phrase:
            return phrase
        first = next((text for text in texts if text.strip()), "")
        if first:
            return clip(first, _NAME_CHARS)
        return "未命名话题" if is_chinese(texts) else "Untitled topic"

    def compose_brief(
        self, messages: Sequence[StoredMessage], stored_vectors: StoredVectors | None = None
    ) -> str:
        """Write a ``Keywords: …`` line and the most representative sentences, oldest first.

        The result is at most ``brief_bytes`` UTF-8 bytes and never ends inside a character.
        ``stored_vectors``: see :meth:`write_with_vectors`.
        """
        texts, weights = _prose(messages)
        if not texts:
            return ""
        keywords = top_keywords(texts, self.brief_keywords, weights=weights)
        brief = truncate_utf8("Keywords: " + ", ".join(keywords), self.brief_bytes)
        used = utf8_len(brief)
        chosen: list[_Sentence] = []
        seen: set[str] = set()
        for sentence in self._ranked_sentences(messages, texts, weights, stored_vectors):
            line = f"\n- {sentence.role}: {sentence.text}"
            cost = utf8_len(line)
            if sentence.text in seen or used + cost > self.brief_bytes:
                continue
            seen.add(sentence.text)
            chosen.append(sentence)
            used += cost
        for sentence in sorted(chosen, key=lambda s: s.order):
            brief += f"\n- {sentence.role}: {sentence.text}"
        return truncate_utf8(brief, self.brief_bytes)

    def _ranked_sentences(
        self,
        messages: Sequence[StoredMessage],
        texts: list[str],
        weights: list[float],
        stored_vectors: StoredVectors | None = None,
    ) -> list[_Sentence]:
        frequency: dict[str, float] = {}
        for text, weight in zip(texts, weights, strict=True):
            for keyword in extract_keywords(text):
                frequency[keyword] = frequency.get(keyword, 0.0) + weight
        top = max(frequency.values(), default=1.0)
        sentences: list[_Sentence] = []
        prose = [m for m in messages if m["role"] in _PROSE_ROLES] or list(messages)
        for index, message in enumerate(prose):
            role_weight = _USER_WEIGHT if message["role"] == "user" else 1.0
            parts = split_sentences(message_text(message))
            whole = indexed_text(message) if len(parts) == 1 else None
            for position, raw in enumerate(parts):
                found = extract_keywords(raw)
                if not found:
                    continue  # "好的" or "Thanks!" say nothing about the topic
                # Dividing by the square root keeps long sentences from winning on length alone.
                density = sum(frequency.get(k, 0.0) for k in found) / top / math.sqrt(len(found))
                text = clip(raw, _SENTENCE_CHARS)
                sentences.append(
                    _Sentence(
                        (index, position),
                        message["role"],
                        text,
                        density * role_weight,
                        message["id"] if text == whole else None,
                    )
                )
        sentences.sort(key=lambda s: (-s.score, s.order))
        if self.sentence_cache is None or len(sentences) < 3:
            return sentences
        return _by_centrality(self.sentence_cache, sentences, stored_vectors)


def _by_centrality(
    cache: VectorCache, sentences: list[_Sentence], stored_vectors: StoredVectors | None = None
) -> list[_Sentence]:
    """Re-rank the densest sentences, half by density and half by closeness to their centroid.

    A sentence that is a whole indexed message takes the index's vector (``stored_vectors``);
    only the others are embedded, through the cache, which they then have to themselves.
    """
    candidates = sentences[:_EMBED_CANDIDATES]
    vectors = _sentence_vectors(cache, candidates, stored_vectors)
    closeness = vectors @ centroid(vectors)
    best_density = max(s.score for s in candidates) or 1.0
    rescored = [
        _Sentence(s.order, s.role, s.text, 0.5 * s.score / best_density + 0.5 * float(c))
        for s, c in zip(candidates, np.asarray(closeness), strict=True)
    ]
    rescored.sort(key=lambda s: (-s.score, s.order))
    return rescored + sentences[_EMBED_CANDIDATES:]


def _sentence_vectors(
    cache: VectorCache, candidates: list[_Sentence], stored_vectors: StoredVectors | None
) -> npt.NDArray[np.float32]:
    """One vector per candidate: the index's for whole messages it holds, else embedded."""
    wholes = [s.whole_of for s in candidates if s.whole_of is not None]
    found = stored_vectors(wholes) if stored_vectors is not None and wholes else {}
    held = [found.get(s.whole_of) if s.whole_of is not None else None for s in candidates]
    rest = [s for s, vector in zip(candidates, held, strict=True) if vector is None]
    embedded = iter(cache.embed([(s.text, s.text) for s in rest]) if rest else ())
    return np.stack(
        [
            np.asarray(vector, np.float32) if vector is not None else next(embedded)
            for vector in held
        ]
    )


def _prose(messages: Sequence[StoredMessage]) -> tuple[list[str], list[float]]:
    """Texts of the user and assistant messages (all messages when there are none), weighted."""
    chosen = [m for m in messages if m["role"] in _PROSE_ROLES] or list(messages)
    texts = [message_text(m) for m in chosen]
    weights = [_USER_WEIGHT if m["role"] == "user" else 1.0 for m in chosen]
    return texts, weights
