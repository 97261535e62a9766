"""Native responder: answers by quoting the assembled window (no language model).

It exists so that the whole graph runs offline and deterministically (tests, demos, the
lightweight mode): it shows which earlier messages the memory put in front of the responder, and
it asks for topic activation the way a model would when it "feels it lacks background".
"""

from __future__ import annotations

from collections.abc import Sequence

from langgraph_topics.keywords import extract_keywords, missing_terms
from langgraph_topics.namespace.reference import find_references
from langgraph_topics.roles.native.text import clip, is_chinese, message_text, split_sentences
from langgraph_topics.roles.protocols import ResponderReply
from langgraph_topics.state.records import AssembledContext, StoredMessage

_QUOTED_ROLES = ("user", "assistant")
"""Tool results are raw data and system text is instructions: neither reads well as a quote."""


class NativeResponder:
    """Quotes the messages of the window that share the most keywords with the user's question.

    The window's messages are its chat part and the split messages topic results referenced.

    Args:
        max_quotes: Most messages quoted in one reply.
        quote_chars: Most characters of one quote.
        min_missing_terms: How many of the question's terms must be absent from the whole window
            before the responder asks for topic activation.
    """

    def __init__(
        self, *, max_quotes: int = 3, quote_chars: int = 160, min_missing_terms: int = 2
    ) -> None:
        self.max_quotes = max_quotes
        self.quote_chars = quote_chars
        self.min_missing_terms = min_missing_terms

    def respond(self, context: AssembledContext, *, can_activate: bool) -> ResponderReply:
        """Answer from the window, or ask for activation when its terms are unknown to it."""
        messages = context["messages"]
        newest = next(
            (i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "user"), None
        )
        question = message_text(messages[newest]) if newest is not None else ""
        # Split messages quoted by topic results come first: they are older than the chat.
        referenced = context.get("referenced_messages", [])
        earlier = [*referenced, *(m for i, m in enumerate(messages) if i != newest)]
        chinese = is_chinese([question]) if question else is_chinese(m["content"] for m in earlier)
        text = self._answer(question, earlier, chinese=chinese)
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

    def _answer(self, question: str, earlier: Sequence[StoredMessage], *, chinese: bool) -> str:
        keywords = set(extract_keywords(question))
        scored: list[tuple[int, int, StoredMessage]] = []
        for index, message in enumerate(earlier):
            if message["role"] not in _QUOTED_ROLES:
                continue
            shared = len(keywords & set(extract_keywords(message_text(message))))
            if shared:
                scored.append((shared, index, message))
        # Most shared keywords first; among equals, the answer over the question, then the newest.
        scored.sort(key=lambda s: (-s[0], s[2]["role"] != "assistant", -s[1]))
        picked = sorted(scored[: self.max_quotes], key=lambda s: s[1])
        if not picked:
            if chinese:
                return "我们之前的对话里还没有关于这个的内容，能再多说一点吗？"
            return "I don't have any earlier context on that yet. Could you tell me more?"
        quotes = [(self._quote(m, keywords), m["id"]) for _, _, m in picked]
        if chinese:
            return "根据我们之前的对话：" + "；".join(f"「{q}」（{i}）" for q, i in quotes)
        return "From our conversation: " + "; ".join(f"«{q}» ({i})" for q, i in quotes)

    def _quote(self, message: StoredMessage, keywords: set[str]) -> str:
        """Return the message's sentence sharing the most keywords with the question."""
        sentences = split_sentences(message_text(message)) or [message_text(message)]
        best = max(sentences, key=lambda s: len(keywords & set(extract_keywords(s))))
        return clip(best, self.quote_chars)

    def _lacks_background(
        self, question: str, earlier: Sequence[StoredMessage], context: AssembledContext
    ) -> bool:
        """Whether enough of the question's terms appear nowhere in the window."""
        window = "\n".join([context["system_prompt"], *(message_text(m) for m in earlier)])
        return len(missing_terms(question, window)) >= self.min_missing_terms
