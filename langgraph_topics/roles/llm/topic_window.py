"""LLM topic window (seed 000 §4.2, §6.1): cheap model, one call per active topic per turn."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from typing import ClassVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from langgraph_topics.prompts.loader import load_prompt
from langgraph_topics.roles.llm.calling import CallPolicy, ModelCaller
from langgraph_topics.roles.llm.card_reply import check_summary, reply_card
from langgraph_topics.roles.llm.escaping import escape_text, render_messages
from langgraph_topics.roles.llm.language import call_language
from langgraph_topics.roles.llm.prefix_share import PrefixTracker
from langgraph_topics.roles.llm.retries import is_prompt_too_long
from langgraph_topics.roles.llm.xml_reply import (
    ReplyFormatError,
    child_text,
    parse_score,
    root_element,
)
from langgraph_topics.roles.protocols import TopicInfo, TopicVerdict, TopicWindow
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.tokens import TokenCounter, default_token_counter
from langgraph_topics.tuning.role_stats import CallRecord, current_collector

ELEMENT = "topic_result"
SUMMARY_THRESHOLD = 0.3
"""The score under which the prompt asks for the score alone (seed 000 §4.2: 0.3)."""
_ID_TOKEN = re.compile(r"[^\s,;，；、`'\"\[\]()]+")


def topic_window_messages(
    topic: TopicInfo,
    topic_messages: Sequence[StoredMessage],
    unsplit: Sequence[StoredMessage],
    *,
    language: str,
    summary_chars: int,
    policy: CallPolicy,
) -> list[BaseMessage]:
    """The prompt: system prompt, the topic's split messages, then the unsplit messages.

    This order keeps the longest possible prefix stable between turns (prompt caching, §12).
    """
    system = load_prompt("topic_window", language, policy.prompt_dir).render(
        topic_name=escape_text(topic["name"]),
        topic_summary=escape_text(topic["brief"]),
        topic_file=escape_text(topic["file"]),
        summary_chars=summary_chars,
        summary_card=load_prompt("summary_card", language, policy.prompt_dir).render(),
    )
    body = load_prompt("topic_window_input", language, policy.prompt_dir).render(
        split_messages=render_messages(topic_messages),
        unsplit_messages=render_messages(unsplit),
    )
    return [SystemMessage(system), HumanMessage(body)]


def parse_verdict(
    reply: str,
    known_ids: set[str],
    *,
    citable_ids: Collection[str] | None = None,
    saved_tokens: Callable[[str, list[str]], int] | None = None,
    summary_threshold: float = SUMMARY_THRESHOLD,
) -> tuple[TopicVerdict, int]:
    """The verdict of a ``<topic_result>`` reply and how many unknown ids were dropped.

    Args:
        reply: The model's reply.
        known_ids: The topic's message ids (what references may name).
        citable_ids: What the summary card's facts may cite (the whole input); ``known_ids``
            by default.
        saved_tokens: ``(summary, referenced ids) -> tokens saved`` for the card; 0 without.
        summary_threshold: Under this score the prompt asks for the score alone: the rest
            is read when well-formed and dropped, without a retry, when not.

    Raises:
        ReplyFormatError: No single closed ``<topic_result>``, a score that is missing, not a
            number or outside [0, 1] (rejected, not clamped), or a malformed ``<card>``.
        DegenerateReply: A summary or card that loops or has empty or repeated facts.
    """
    body = root_element(reply, ELEMENT)
    score = parse_score(child_text(body, "relevance_score", required=True), "relevance_score")
    if score < summary_threshold:
        # Under the threshold only the score is used (seed 000 §6.1): what else a model wrote
        # is read when it is well-formed, and a malformed rest costs no retry.
        try:
            return _references_and_summary(body, score, known_ids, citable_ids, saved_tokens)
        except ReplyFormatError:
            return {"relevance_score": score, "referenced_message_ids": [], "summary": ""}, 0
    return _references_and_summary(body, score, known_ids, citable_ids, saved_tokens)


def _references_and_summary(
    body: str,
    score: float,
    known_ids: set[str],
    citable_ids: Collection[str] | None,
    saved_tokens: Callable[[str, list[str]], int] | None,
) -> tuple[TopicVerdict, int]:
    listed = child_text(body, "referenced_messages") or ""
    tokens = [t.lstrip("-*•").strip() for t in _ID_TOKEN.findall(listed)]
    tokens = [t for t in tokens if t]
    kept = list(dict.fromkeys(t for t in tokens if t in known_ids))
    dropped = len([t for t in tokens if t not in known_ids and _looks_like_id(t)])
    summary = child_text(body, "summary") or ""
    verdict: TopicVerdict = {
        "relevance_score": score,
        "referenced_message_ids": kept,
        "summary": summary,
    }
    if summary:
        check_summary(summary)
        card = reply_card(
            body,
            summary=summary,
            known_ids=known_ids if citable_ids is None else citable_ids,
            tokens_saved=saved_tokens(summary, kept) if saved_tokens else 0,
        )
        if card is not None:
            verdict["card"] = card
    return verdict, dropped


def _looks_like_id(token: str) -> bool:
    """Whether a token of the list was meant as an id (models sometimes add words around ids)."""
    return any(ch.isdigit() for ch in token) or "-" in token


class LlmTopicWindow:
    """Scores a topic and picks its messages with a chat model.

    Args:
        model: The cheap model.
        fallback: The native topic window, serving a call whose replies stay malformed.
        policy: Retries, prompt directory, language preference.
        summary_chars: The summary's soft limit, told to the model.
        prefixes: Tracker of each topic's previous prompt (prefix share per call).
        count_tokens: How a summary card's ``tokens_saved`` is counted.
    """

    governed: ClassVar[bool] = True
    """Each read is a model call: the governor decides which topics are read each turn
    (``activation/governor.py``)."""

    def __init__(
        self,
        model: BaseChatModel,
        fallback: TopicWindow,
        policy: CallPolicy,
        *,
        summary_chars: int = 2000,
        prefixes: PrefixTracker | None = None,
        count_tokens: TokenCounter | None = None,
    ) -> None:
        self.caller = ModelCaller("topic_window", model, policy)
        self.fallback = fallback
        self.policy = policy
        self.summary_chars = summary_chars
        self.prefixes = prefixes or PrefixTracker()
        self.count_tokens = count_tokens or default_token_counter()

    def evaluate(
        self,
        topic: TopicInfo,
        topic_messages: Sequence[StoredMessage],
        unsplit: Sequence[StoredMessage],
    ) -> TopicVerdict:
        """Score the topic and pick the messages the main window needs.

        A provider failure that outlasts its retries raises (the node then leaves the topic out
        of this turn), except a prompt refused as too long, which the native back end serves
        (marked ``prompt_refused``); a reply malformed after the retry falls back to it too.
        """
        language = call_language(self.policy.language, [*topic_messages[-3:], *unsplit])
        messages = topic_window_messages(
            topic,
            topic_messages,
            unsplit,
            language=language,
            summary_chars=self.summary_chars,
            policy=self.policy,
        )
        found = current_collector()
        thread_id = found[1] if found else "default"
        record = CallRecord("topic_window", topic_id=topic["id"])
        record.prefix_share = self.prefixes.share(
            (thread_id, topic["id"]), "\n\n".join(str(m.content) for m in messages)
        )
        known = {m["id"] for m in topic_messages}
        citable = known | {m["id"] for m in unsplit}

        def saved_tokens(summary: str, quoted: list[str]) -> int:
            # The summary stands in for the topic's messages the main window does not quote.
            skipped = set(quoted)
            rest = sum(
                self.count_tokens(m["content"]) for m in topic_messages if m["id"] not in skipped
            )
            return rest - self.count_tokens(summary)

        def parse(reply: AIMessage) -> TopicVerdict:
            verdict, dropped = parse_verdict(
                reply.text, known, citable_ids=citable, saved_tokens=saved_tokens
            )
            record.dropped_ids += dropped
            return verdict

        try:
            return self.caller.guarded(
                record,
                lambda: self.caller.ask(
                    messages, parse, element=ELEMENT, language=language, record=record
                ),
                lambda: self.fallback.evaluate(topic, topic_messages, unsplit),
                fallback_on_failure=False,
            )
        except Exception as error:
            if not is_prompt_too_long(error):
                raise
            # The topic outgrew the model's context: the native back end reads it this turn,
            # and the next split divides it (seed 000 §4.5), instead of a silent drop.
            served = self.fallback.evaluate(topic, topic_messages, unsplit)
            return {**served, "prompt_refused": True}
