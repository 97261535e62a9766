"""LLM topic window (seed 000 §4.2, §6.1): cheap model, one call per active topic per turn."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, ClassVar, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from langgraph_topics.prompts.loader import load_prompt
from langgraph_topics.roles.llm.cache_breakpoints import breakpoint_mark, marked_content
from langgraph_topics.roles.llm.calling import CallPolicy, ModelCaller
from langgraph_topics.roles.llm.card_reply import check_summary, reply_card
from langgraph_topics.roles.llm.escaping import escape_text, render_numbered
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
from langgraph_topics.state.messages import text_of
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.state.working_set import newest_within
from langgraph_topics.summaries.card import FACT_FIELDS, SummaryCard
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
    summaries: bool = False,
    mark: dict[str, Any] | None = None,
) -> list[BaseMessage]:
    """The prompt: instructions, the topic's split messages, its name and brief, the unsplit.

    Messages are numbered (``render_numbered``): the reply references them by number
    (``message_numbers`` turns the numbers back into ids). This order keeps the longest
    possible prefix stable between turns (prompt caching, §12):
    the instructions are the same for every topic, the split messages only grow, and a
    rewritten brief comes after them. ``mark`` (``cache_breakpoints``) ends the stable prefix
    with an explicit breakpoint. ``summaries``: the reply adds a summary and a card.
    """
    output_format = load_prompt("topic_window_references", language, policy.prompt_dir).render()
    if summaries:
        output_format += "\n" + load_prompt(
            "topic_window_summary", language, policy.prompt_dir
        ).render(
            summary_chars=summary_chars,
            summary_card=load_prompt("summary_card", language, policy.prompt_dir).render(),
        )
    system = load_prompt("topic_window", language, policy.prompt_dir).render(
        output_format=output_format
    )
    stable = load_prompt("topic_window_input", language, policy.prompt_dir).render(
        split_messages=render_numbered(topic_messages)
    )
    turn = load_prompt("topic_window_turn", language, policy.prompt_dir).render(
        topic_name=escape_text(topic["name"]),
        topic_summary=escape_text(topic["brief"]),
        topic_file=escape_text(topic["file"]),
        unsplit_messages=render_numbered(unsplit, first=len(topic_messages) + 1),
    )
    return [SystemMessage(system), HumanMessage(marked_content(stable, "\n" + turn, mark))]


def message_numbers(
    topic_messages: Sequence[StoredMessage], unsplit: Sequence[StoredMessage]
) -> dict[str, str]:
    """What a reply may name each message by → its id.

    The prompt shows numbers (``render_numbered``); a message's own id is accepted too (a
    model that was shown ids elsewhere, a user's prompt), a number first where both read
    alike.
    """
    shown = [*topic_messages, *unsplit]
    numbers = {m["id"]: m["id"] for m in shown}
    numbers.update((str(number), m["id"]) for number, m in enumerate(shown, start=1))
    return numbers


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


def with_ids(verdict: TopicVerdict, numbers: Mapping[str, str]) -> TopicVerdict:
    """A verdict parsed from message numbers, with the messages' ids in their place."""
    mapped: TopicVerdict = {
        **verdict,
        "referenced_message_ids": list(
            dict.fromkeys(numbers[n] for n in verdict["referenced_message_ids"])
        ),
    }
    card = verdict.get("card")
    if card is not None:
        cited: dict[str, object] = {**card}
        for field_name in FACT_FIELDS:
            cited[field_name] = [
                {
                    **fact,
                    "message_ids": list(dict.fromkeys(numbers[n] for n in fact["message_ids"])),
                }
                for fact in card[field_name]  # type: ignore[literal-required]
            ]
        mapped["card"] = cast(SummaryCard, cited)
    return mapped


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
        summaries: Whether the model writes a summary and a card beside its references.
        context_tokens: The newest unsplit messages it reads (``newest_within``; None: all).
        cache_breakpoints: ``Settings.cache_breakpoints`` (explicit cache breakpoints).
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
        summaries: bool = False,
        context_tokens: int | None = None,
        cache_breakpoints: bool | None = None,
        prefixes: PrefixTracker | None = None,
        count_tokens: TokenCounter | None = None,
    ) -> None:
        self.caller = ModelCaller("topic_window", model, policy)
        self.fallback = fallback
        self.policy = policy
        self.summary_chars = summary_chars
        self.summaries = summaries
        self.context_tokens = context_tokens
        self.mark = breakpoint_mark(model, cache_breakpoints)
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
        if self.context_tokens is not None:
            unsplit = newest_within(unsplit, self.context_tokens, self.count_tokens)
        language = call_language(self.policy.language, [*topic_messages[-3:], *unsplit])
        messages = topic_window_messages(
            topic,
            topic_messages,
            unsplit,
            language=language,
            summary_chars=self.summary_chars,
            policy=self.policy,
            summaries=self.summaries,
            mark=self.mark,
        )
        found = current_collector()
        thread_id = found[1] if found else "default"
        record = CallRecord("topic_window", topic_id=topic["id"])
        record.prefix_share = self.prefixes.share(
            (thread_id, topic["id"]), "\n\n".join(text_of(m) for m in messages)
        )
        numbers = message_numbers(topic_messages, unsplit)
        topic_ids = {m["id"] for m in topic_messages}
        known = {name for name, message_id in numbers.items() if message_id in topic_ids}

        def saved_tokens(summary: str, quoted: list[str]) -> int:
            # The summary stands in for the topic's messages the main window does not quote.
            skipped = {numbers[n] for n in quoted}
            rest = sum(
                self.count_tokens(m["content"]) for m in topic_messages if m["id"] not in skipped
            )
            return rest - self.count_tokens(summary)

        def parse(reply: AIMessage) -> TopicVerdict:
            verdict, dropped = parse_verdict(
                reply.text, known, citable_ids=numbers.keys(), saved_tokens=saved_tokens
            )
            record.dropped_ids += dropped
            return with_ids(verdict, numbers)

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
