"""LLM index router (seed 000 §6.3): cheap model, picks topics among the index candidates."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from langgraph_topics.prompts.loader import load_prompt
from langgraph_topics.roles.llm.calling import CallPolicy, ModelCaller
from langgraph_topics.roles.llm.escaping import escape_attribute, escape_text
from langgraph_topics.roles.llm.language import call_language
from langgraph_topics.roles.llm.xml_reply import (
    ReplyFormatError,
    child_text,
    elements,
    root_element,
)
from langgraph_topics.roles.protocols import (
    IndexRouter,
    IndexRouting,
    IndexWindow,
    RoutedTopic,
    TopicInfo,
)
from langgraph_topics.tuning.role_stats import CallRecord

ELEMENT = "topic_routing"
RELEVANCE_LEVELS = {"high": 0.9, "medium": 0.6, "low": 0.35}
"""The seed's three levels as numbers: ``low`` still clears the activation threshold at few
active topics (0.29) and, halved, on a deep search; ``medium`` clears it up to 13 active."""
NEW_TOPIC_ANSWERS = {"yes": True, "true": True, "no": False, "false": False}
EMPTY_WINDOW: IndexWindow = {"recent": [], "days": []}


def render_candidates(candidates: Sequence[tuple[TopicInfo, float]]) -> str:
    """The candidates as escaped ``<topic>`` elements with their index similarity."""
    lines = [
        f'<topic id="{escape_attribute(info["id"])}" similarity="{similarity:.2f}">'
        f"<name>{escape_text(info['name'])}</name><brief>{escape_text(info['brief'])}</brief>"
        "</topic>"
        for info, similarity in candidates
    ]
    return "\n".join(lines) or "-"


def render_recent(window: IndexWindow) -> str:
    """The recently active topics as escaped ``<topic>`` elements (no similarity: not searched)."""
    lines = [
        f'<topic id="{escape_attribute(info["id"])}">'
        f"<name>{escape_text(info['name'])}</name><brief>{escape_text(info['brief'])}</brief>"
        "</topic>"
        for info in window["recent"]
    ]
    return "\n".join(lines) or "-"


def render_days(window: IndexWindow) -> str:
    """The time index as ``<day>`` elements, newest first: the topics discussed that day."""
    lines = [
        f'<day date="{escape_attribute(day)}">{escape_text("; ".join(names))}</day>'
        for day, names in window["days"]
    ]
    return "\n".join(lines) or "-"


def parse_routing(reply: str, candidate_ids: set[str]) -> list[RoutedTopic]:
    """The matched topics of a ``<topic_routing>`` reply, in the model's order.

    Raises:
        ReplyFormatError: No single closed ``<topic_routing>``; an id that is not a candidate; a
            relevance that is neither high/medium/low nor a number in [0, 1].
    """
    return parse_index_routing(reply, candidate_ids)["topics"]


def parse_index_routing(
    reply: str, candidate_ids: set[str], recent_ids: Collection[str] = ()
) -> IndexRouting:
    """The matched candidates of a ``<topic_routing>`` reply and its new-topic verdict.

    A recently active topic the model lists is already active: it is left out of the ranking,
    but it is a match, so the query continues it and opens no new topic (whatever
    ``<new_topic>`` says, as for any match).

    Raises:
        ReplyFormatError: As ``parse_routing``; or a ``<new_topic>`` that is neither yes nor no.
    """
    body = root_element(reply, ELEMENT)
    routed: list[RoutedTopic] = []
    problems: list[str] = []
    seen: set[str] = set()
    continued = False
    for attributes, reason in elements(body, "topic"):
        topic_id = attributes.get("id", "").strip()
        level = attributes.get("relevance", "").strip().lower()
        if topic_id in recent_ids and topic_id not in candidate_ids:
            continued = True
            continue
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
    answer = (child_text(body, "new_topic") or "no").strip().lower()
    if answer not in NEW_TOPIC_ANSWERS:
        problems.append(f"<new_topic> must be yes or no, not {answer!r}")
    if problems:
        raise ReplyFormatError("; ".join(problems))
    routed.sort(key=lambda r: -r["relevance"])  # stable: the model's order among equals
    new_topic = NEW_TOPIC_ANSWERS[answer] and not routed and not continued
    return {"topics": routed, "new_topic": new_topic}


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
        window: IndexWindow = EMPTY_WINDOW,
    ) -> list[BaseMessage]:
        """The prompt: the static system prompt, then the index window's three inputs.

        The query, the recent topics, the candidates and the time index (seed 000 §2).
        """
        directory = self.policy.prompt_dir
        note = load_prompt("index_router_deep_note", language, directory).template if deep else ""
        body = load_prompt("index_router_input", language, directory).render(
            query=escape_text(query),
            candidates=render_candidates(candidates),
            search_note=note.strip(),
            recent=render_recent(window),
            time_index=render_days(window),
        )
        system = load_prompt("index_router", language, directory).render()
        return [SystemMessage(system), HumanMessage(body)]

    def route(
        self, query: str, candidates: Sequence[tuple[TopicInfo, float]], *, deep: bool
    ) -> list[RoutedTopic]:
        """Rank the candidates, best first (no call at all when there are none)."""
        return self.route_window(query, candidates, EMPTY_WINDOW, deep=deep)["topics"]

    def route_window(
        self,
        query: str,
        candidates: Sequence[tuple[TopicInfo, float]],
        window: IndexWindow,
        *,
        deep: bool,
    ) -> IndexRouting:
        """Rank the candidates reading the whole window; or confirm a new subject.

        No call at all when there are no candidates. The native fallback never confirms a
        new topic: without the model's judgement the split decides as it always did.
        """
        if not candidates:
            return {"topics": [], "new_topic": False}
        language = call_language(self.policy.language, [], query)
        record = CallRecord("index_router")
        ids = {info["id"] for info, _ in candidates}
        recent_ids = {info["id"] for info in window["recent"]}

        def parse(reply: AIMessage) -> IndexRouting:
            return parse_index_routing(reply.text, ids, recent_ids)

        def native() -> IndexRouting:
            return {"topics": self.fallback.route(query, candidates, deep=deep), "new_topic": False}

        return self.caller.guarded(
            record,
            lambda: self.caller.ask(
                self.messages(query, candidates, deep=deep, language=language, window=window),
                parse,
                element=ELEMENT,
                language=language,
                record=record,
            ),
            native,
            fallback_on_failure=True,
        )
