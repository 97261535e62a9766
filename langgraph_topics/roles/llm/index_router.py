"""LLM index router (seed 000 §6.3): cheap model, picks topics among the index candidates."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from langgraph_topics.prompts.loader import load_prompt
from langgraph_topics.roles.llm.calling import CallPolicy, ModelCaller
from langgraph_topics.roles.llm.escaping import escape_attribute, escape_text
from langgraph_topics.roles.llm.language import call_language
from langgraph_topics.roles.llm.xml_reply import ReplyFormatError, elements, root_element
from langgraph_topics.roles.protocols import IndexRouter, RoutedTopic, TopicInfo
from langgraph_topics.tuning.role_stats import CallRecord

ELEMENT = "topic_routing"
RELEVANCE_LEVELS = {"high": 0.9, "medium": 0.6, "low": 0.35}
"""The seed's three levels as numbers: ``low`` still clears the activation threshold at few
active topics (0.29) and, halved, on a deep search; ``medium`` clears it up to 13 active."""


def render_candidates(candidates: Sequence[tuple[TopicInfo, float]]) -> str:
    """The candidates as escaped ``<topic>`` elements with their index similarity."""
    lines = [
        f'<topic id="{escape_attribute(info["id"])}" similarity="{similarity:.2f}">'
        f"<name>{escape_text(info['name'])}</name><brief>{escape_text(info['brief'])}</brief>"
        "</topic>"
        for info, similarity in candidates
    ]
    return "\n".join(lines) or "-"


def parse_routing(reply: str, candidate_ids: set[str]) -> list[RoutedTopic]:
    """The matched topics of a ``<topic_routing>`` reply, in the model's order.

    Raises:
        ReplyFormatError: No single closed ``<topic_routing>``; an id that is not a candidate; a
            relevance that is neither high/medium/low nor a number in [0, 1].
    """
    body = root_element(reply, ELEMENT)
    routed: list[RoutedTopic] = []
    problems: list[str] = []
    seen: set[str] = set()
    for attributes, reason in elements(body, "topic"):
        topic_id = attributes.get("id", "").strip()
        level = attributes.get("relevance", "").strip().lower()
        if topic_id not in candidate_ids:
            problems.append(f"unknown topic id {topic_id!r} (use a candidate's id)")
            continue
        if level in RELEVANCE_LEVELS:
            relevance = RELEVANCE_LEVELS[level]
        else:
            try:
                relevance = float(level)
            except ValueError:
                relevance = -1.0
            if not 0.0 <= relevance <= 1.0:
                problems.append(f"topic {topic_id}: relevance must be high, medium or low")
                continue
        if topic_id in seen:
            continue
        seen.add(topic_id)
        routed.append({"topic_id": topic_id, "relevance": relevance, "reason": reason.strip()})
    if problems:
        raise ReplyFormatError("; ".join(problems))
    routed.sort(key=lambda r: -r["relevance"])  # stable: the model's order among equals
    return routed


class LlmIndexRouter:
    """Ranks index candidates for a query with a chat model.

    Args:
        model: The cheap model.
        fallback: The native router.
        policy: Retries, prompt directory, language preference.
    """

    def __init__(self, model: BaseChatModel, fallback: IndexRouter, policy: CallPolicy) -> None:
        self.caller = ModelCaller("index_router", model, policy)
        self.fallback = fallback
        self.policy = policy

    def messages(
        self,
        query: str,
        candidates: Sequence[tuple[TopicInfo, float]],
        *,
        deep: bool,
        language: str,
    ) -> list[BaseMessage]:
        """The prompt: the static system prompt, then the query and the candidates."""
        directory = self.policy.prompt_dir
        note = load_prompt("index_router_deep_note", language, directory).template if deep else ""
        body = load_prompt("index_router_input", language, directory).render(
            query=escape_text(query),
            candidates=render_candidates(candidates),
            search_note=note.strip(),
        )
        system = load_prompt("index_router", language, directory).render()
        return [SystemMessage(system), HumanMessage(body)]

    def route(
        self, query: str, candidates: Sequence[tuple[TopicInfo, float]], *, deep: bool
    ) -> list[RoutedTopic]:
        """Rank the candidates, best first (no call at all when there are none)."""
        if not candidates:
            return []
        language = call_language(self.policy.language, [], query)
        record = CallRecord("index_router")
        ids = {info["id"] for info, _ in candidates}

        def parse(reply: AIMessage) -> list[RoutedTopic]:
            return parse_routing(reply.text, ids)

        return self.caller.guarded(
            record,
            lambda: self.caller.ask(
                self.messages(query, candidates, deep=deep, language=language),
                parse,
                element=ELEMENT,
                language=language,
                record=record,
            ),
            lambda: self.fallback.route(query, candidates, deep=deep),
            fallback_on_failure=True,
        )
