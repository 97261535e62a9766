"""LLM brief writer (seed 000 §4.6): cheap model, rewrites a topic's name and ~1 KB brief."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from langgraph_topics.prompts.loader import load_prompt
from langgraph_topics.roles.llm.calling import CallPolicy, ModelCaller
from langgraph_topics.roles.llm.card_reply import check_summary, reply_card
from langgraph_topics.roles.llm.escaping import escape_text, render_messages
from langgraph_topics.roles.llm.language import call_language
from langgraph_topics.roles.llm.xml_reply import ReplyFormatError, child_text, root_element
from langgraph_topics.roles.protocols import BriefWriter, TopicInfo
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.summaries import SummaryCard
from langgraph_topics.summaries.native import native_card
from langgraph_topics.tokens import TokenCounter, default_token_counter
from langgraph_topics.tuning.role_stats import CallRecord

ELEMENT = "topic_brief"
MAX_NAME_CHARS = 80
BRIEF_OVERRUN = 2
"""A brief may run to twice its size (the size is a guideline); beyond that it is cut."""
INPUT_CHARS = 40_000
"""Most characters of topic messages shown; a longer topic shows its newest messages, since the
current brief already covers the older ones."""


def clip_bytes(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, on a character boundary."""
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    return encoded[:limit].decode("utf-8", errors="ignore").rstrip() + "…"


def newest_within(messages: Sequence[StoredMessage], chars: int) -> list[StoredMessage]:
    """The newest messages whose text fits in ``chars`` (at least one)."""
    kept: list[StoredMessage] = []
    used = 0
    for message in reversed(messages):
        used += len(message["content"])
        if kept and used > chars:
            break
        kept.append(message)
    return kept[::-1]


def parse_brief(reply: str, brief_bytes: int) -> tuple[str, str]:
    """``(name, brief)`` of a ``<topic_brief>`` reply.

    An overlong name or brief is cut (they are guidelines); an empty one is rejected.

    Raises:
        ReplyFormatError: No single closed ``<topic_brief>``, or an empty name or brief.
    """
    body = root_element(reply, ELEMENT)
    name = child_text(body, "name", required=True) or ""
    brief = child_text(body, "brief", required=True) or ""
    if not name:
        raise ReplyFormatError("<name> is empty")
    if not brief:
        raise ReplyFormatError("<brief> is empty")
    name = " ".join(name.split())[:MAX_NAME_CHARS]
    return name, clip_bytes(brief, brief_bytes * BRIEF_OVERRUN)


class LlmBriefWriter:
    """Rewrites a topic's name and brief with a chat model.

    Args:
        model: The cheap model.
        fallback: The native brief writer.
        policy: Retries, prompt directory, language preference.
        brief_bytes: The brief's size, told to the model.
        count_tokens: How the brief card's ``tokens_saved`` is counted.
    """

    def __init__(
        self,
        model: BaseChatModel,
        fallback: BriefWriter,
        policy: CallPolicy,
        *,
        brief_bytes: int,
        count_tokens: TokenCounter | None = None,
    ) -> None:
        self.caller = ModelCaller("brief_writer", model, policy)
        self.fallback = fallback
        self.policy = policy
        self.brief_bytes = brief_bytes
        self.count_tokens = count_tokens or default_token_counter()

    def messages(
        self, topic: TopicInfo, messages: Sequence[StoredMessage], language: str
    ) -> list[BaseMessage]:
        """The prompt: system prompt, the topic's messages, then its current name and brief."""
        system = load_prompt("brief_writer", language, self.policy.prompt_dir).render(
            brief_bytes=self.brief_bytes,
            summary_card=load_prompt("summary_card", language, self.policy.prompt_dir).render(),
        )
        body = load_prompt("brief_writer_input", language, self.policy.prompt_dir).render(
            messages=render_messages(newest_within(messages, INPUT_CHARS)),
            name=escape_text(topic["name"]),
            brief=escape_text(topic["brief"]),
        )
        return [SystemMessage(system), HumanMessage(body)]

    def write(self, topic: TopicInfo, messages: Sequence[StoredMessage]) -> tuple[str, str]:
        """Return ``(name, brief)``; the native writer serves when the model cannot."""
        name, brief, _ = self.write_with_card(topic, messages)
        return name, brief

    def write_with_card(
        self, topic: TopicInfo, messages: Sequence[StoredMessage]
    ) -> tuple[str, str, SummaryCard]:
        """Return ``(name, brief, card)``; the native writer serves when the model cannot.

        The card is the model's ``<card>`` (checked against the messages it was shown), or a
        native card of the messages when the reply has none or the native writer served.
        """
        language = call_language(self.policy.language, messages)
        record = CallRecord("brief_writer", topic_id=topic["id"])
        shown = newest_within(messages, INPUT_CHARS)
        source_tokens = sum(self.count_tokens(m["content"]) for m in messages)

        def native(name: str, brief: str) -> SummaryCard:
            return native_card(messages, brief, name=name, count_tokens=self.count_tokens)

        def parse(reply: AIMessage) -> tuple[str, str, SummaryCard]:
            name, brief = parse_brief(reply.text, self.brief_bytes)
            check_summary(brief)
            card = reply_card(
                root_element(reply.text, ELEMENT),
                summary=brief,
                known_ids={m["id"] for m in shown},
                tokens_saved=source_tokens - self.count_tokens(brief),
            )
            return name, brief, card or native(name, brief)

        def fallback() -> tuple[str, str, SummaryCard]:
            name, brief = self.fallback.write(topic, messages)
            return name, brief, native(name, brief)

        return self.caller.guarded(
            record,
            lambda: self.caller.ask(
                self.messages(topic, messages, language),
                parse,
                element=ELEMENT,
                language=language,
                record=record,
            ),
            fallback,
            fallback_on_failure=True,
        )
