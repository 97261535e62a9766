"""Native responder: answers from the evidence the assembled window holds (no language model).

It is the product's face when no model is configured, and what keeps the whole graph offline
and deterministic (tests, demos, the lightweight mode). It answers the way a retrieval-only
assistant would: it quotes, with their dates, the messages of the window (quoted in topic
blocks, unsplit, recent) that best match the question ("On 8 May 2023 you asked: “…”"). It
never quotes its own earlier replies (they say nothing the quoted messages did not, and quoting
them nests quotes in quotes), and it says it has nothing only when no message of the window
matches. It also asks for topic activation the way a model would when it "feels it lacks
background".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from langgraph_topics.keywords import extract_keywords, missing_terms
from langgraph_topics.namespace.reference import find_references
from langgraph_topics.roles.native.answer_evidence import Evidence, answers_of, gather, rank
from langgraph_topics.roles.native.reply_wording import (
    NOTHING_EN,
    NOTHING_ZH,
    Quote,
    courtesy_reply,
    day_of,
    render_answer,
)
from langgraph_topics.roles.native.text import clip, is_chinese, message_text, split_sentences
from langgraph_topics.roles.native.vectors import Vector, VectorCache
from langgraph_topics.roles.protocols import ResponderReply
from langgraph_topics.state.records import AssembledContext, StoredMessage
from langgraph_topics.stores.protocols import Embedder

WINDOW_VECTOR_BYTES = 2**20
"""Bound of the responder's own vector cache: ~450 vectors, several turns of what it embeds
(the question and the window's unindexed messages; a quoted split message takes the index's
vector). Sharing the topic window's 8 MB cache kept a vector of every question asked, long
after its turn: it held 4.8 MB more at turn 3,000 of ``bench soak`` than at turn 1,000."""

_KEEP_SHARE = 0.8
"""A quote after the best one must score at least this share of the best one's score: a
second quote is worth its words only when it is nearly as good."""


class NativeResponder:
    """Answers with the window's messages that best match the question, quoted and dated.

    Args:
        embedder: Judges matches by meaning as well as by shared terms (terms alone without it).
        vectors: A cache of message vectors to use. Built from ``embedder`` when not given,
            bounded by ``WINDOW_VECTOR_BYTES``.
        max_quotes: Most messages quoted in one reply (an earlier answer following a quoted
            question comes with it and is not counted).
        quote_chars: Most characters of one quote.
        min_missing_terms: How many of the question's terms must be absent from the whole window
            before the responder asks for topic activation.
    """

    def __init__(
        self,
        embedder: Embedder | None = None,
        *,
        vectors: VectorCache | None = None,
        max_quotes: int = 2,
        quote_chars: int = 160,
        min_missing_terms: int = 2,
    ) -> None:
        if vectors is None and embedder is not None:
            vectors = VectorCache(embedder, max_bytes=WINDOW_VECTOR_BYTES)
        self.vectors = vectors
        self.max_quotes = max_quotes
        self.quote_chars = quote_chars
        self.min_missing_terms = min_missing_terms

    @property
    def embedder(self) -> object | None:
        """The embedder of its vectors (None: it matches by terms only)."""
        return self.vectors.embedder if self.vectors is not None else None

    def respond(self, context: AssembledContext, *, can_activate: bool) -> ResponderReply:
        """Answer from the window, or ask for activation when its terms are unknown to it."""
        return self.respond_with_vectors(context, can_activate=can_activate, vectors={})

    def respond_with_vectors(
        self,
        context: AssembledContext,
        *,
        can_activate: bool,
        vectors: Mapping[str, Vector],
    ) -> ResponderReply:
        """``respond``, comparing the messages whose indexed vector is given by that vector."""
        messages = context["messages"]
        newest = next(
            (i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "user"), None
        )
        asking = messages[newest] if newest is not None else None
        question = message_text(asking) if asking is not None else ""
        # Split messages quoted by topic results come first: they are older than the chat.
        referenced = context.get("referenced_messages", [])
        chat = [m for i, m in enumerate(messages) if i != newest]
        earlier = [*referenced, *chat]
        chinese = is_chinese([question]) if question else is_chinese(m["content"] for m in earlier)
        text = self._answer(question, asking, referenced, chat, chinese=chinese, known=vectors)
        reference = self._reference_to_read(question, earlier, context)
        if reference is not None:
            return {"text": text, "activate_query": None, "read_namespace": reference}
        activate = None
        if can_activate and question and self._lacks_background(question, earlier, context):
            activate = question
        return {"text": text, "activate_query": activate}

    def _reference_to_read(
        self, question: str, earlier: Sequence[StoredMessage], context: AssembledContext
    ) -> str | None:
        """A stored tool result to read first, or None.

        The one the question names, else the newest one when the window lacks the question's
        terms (its full text may hold them).
        """
        readable = context.get("namespace_refs") or []
        if not readable or not question:
            return None
        named = [r for r in find_references(question) if r in readable]
        if named:
            return named[0]
        if self._lacks_background(question, earlier, context):
            return readable[-1]
        return None

    def _answer(
        self,
        question: str,
        asking: StoredMessage | None,
        referenced: Sequence[StoredMessage],
        chat: Sequence[StoredMessage],
        *,
        chinese: bool,
        known: Mapping[str, Vector],
    ) -> str:
        courtesy = courtesy_reply(question, chinese=chinese) if question else None
        if courtesy is not None:
            return courtesy
        evidence = [
            *gather(referenced, 0, referenced=True),
            *gather(chat, len(referenced), referenced=False),
        ]
        picked = self._pick(question, asking, evidence, known)
        if not picked:
            return NOTHING_ZH if chinese else NOTHING_EN
        keywords = set(extract_keywords(question))
        quotes = [
            Quote(
                text=self._quote(e.text, keywords),
                speaker=_speaker(e.message),
                day=day_of(e.message.get("timestamp")),
            )
            for e in picked
        ]
        today = day_of(asking.get("timestamp")) if asking is not None else None
        return render_answer(quotes, today=today, chinese=chinese)

    def _pick(
        self,
        question: str,
        asking: StoredMessage | None,
        evidence: list[Evidence],
        known: Mapping[str, Vector],
    ) -> list[Evidence]:
        """The best matches (nearly as good as the best one), in conversation order.

        Each quoted question is followed by its earlier answer when the window holds one.

        Without a convincing match, the best message a topic window quoted: the memory judged
        it relevant, so "nothing yet" would be untrue.
        """
        ranked = rank(question, asking, evidence, self.vectors, known)
        matches = [m for m in ranked if m.convincing]
        if not matches:
            # A message a topic window quoted was judged relevant by the memory: the best of
            # them is quoted rather than saying there is nothing.
            matches = [m for m in ranked if m.evidence.referenced][:1]
        if not matches:
            return []
        best = matches[0].score
        chosen: list[Evidence] = []
        said: set[str] = set()
        for match in matches:
            if len(chosen) == self.max_quotes or match.score < _KEEP_SHARE * best:
                break
            if match.evidence.text not in said:
                chosen.append(match.evidence)
                said.add(match.evidence.text)
        return sorted([*chosen, *answers_of(chosen, evidence)], key=lambda e: e.order)

    def _quote(self, text: str, keywords: set[str]) -> str:
        """The message whole when it is short, else its sentence sharing most with the question."""
        if len(text) <= self.quote_chars:
            return text
        sentences = split_sentences(text) or [text]
        best = max(sentences, key=lambda s: len(keywords & set(extract_keywords(s))))
        return clip(best, self.quote_chars)

    def _lacks_background(
        self, question: str, earlier: Sequence[StoredMessage], context: AssembledContext
    ) -> bool:
        """Whether enough of the question's terms appear nowhere in the window."""
        window = "\n".join([context["system_prompt"], *(message_text(m) for m in earlier)])
        return len(missing_terms(question, window)) >= self.min_missing_terms


def _speaker(message: StoredMessage) -> str:
    """Who said it, as the reply names them: "you", "I", or a named speaker."""
    name = message.get("name")
    if name:
        return name
    return "you" if message["role"] == "user" else "I"
