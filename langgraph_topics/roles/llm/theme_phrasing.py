"""LLM theme phrasing (seed 004 §3, "the LLM only phrases"): names and one-line summaries.

The themes are computed natively; the cheap model only words what that material already
selected: each theme's keywords, its units' headlines and one-liners, its changes of state.
It never sees the history itself, so its input stays bounded whatever the thread's length.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from langgraph_topics.prompts.language import detect_language
from langgraph_topics.prompts.loader import load_prompt
from langgraph_topics.roles.llm.calling import CallPolicy, ModelCaller
from langgraph_topics.roles.llm.escaping import escape_attribute, escape_text
from langgraph_topics.roles.llm.xml_reply import (
    ReplyFormatError,
    child_text,
    elements,
    root_element,
)
from langgraph_topics.roles.protocols import ThemeMaterial, ThemePhrase
from langgraph_topics.tuning.role_stats import CallRecord

ROLE = "theme_phrasing"
ELEMENT = "theme_phrases"
MAX_NAME_CHARS = 60
MAX_SUMMARY_CHARS = 240
"""A longer name or summary is cut: the name is a label, the summary one line."""


def render_material(materials: Sequence[ThemeMaterial]) -> str:
    """The themes as ``<theme>`` elements of their material, escaped."""
    blocks: list[str] = []
    for material in materials:
        lines = [
            f'<theme id="{escape_attribute(material["theme_id"])}">',
            f"<keywords>{escape_text(', '.join(material['keywords']))}</keywords>",
            *(f"<unit>{escape_text(unit)}</unit>" for unit in material["units"]),
            *(f"<change>{escape_text(state)}</change>" for state in material["states"]),
            "</theme>",
        ]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def parse_phrases(reply: str, known: set[str]) -> dict[str, ThemePhrase]:
    """Theme id → phrase of a ``<theme_phrases>`` reply; unknown ids and empty parts skipped.

    Raises:
        ReplyFormatError: No single closed ``<theme_phrases>``, or no theme phrased in it.
    """
    body = root_element(reply, ELEMENT)
    phrases: dict[str, ThemePhrase] = {}
    for attributes, inner in elements(body, "theme"):
        theme_id = attributes.get("id", "")
        if theme_id not in known or theme_id in phrases:
            continue
        name = " ".join((child_text(inner, "name") or "").split())
        summary = " ".join((child_text(inner, "summary") or "").split())
        if name and summary:
            phrases[theme_id] = {
                "name": name[:MAX_NAME_CHARS],
                "summary": summary[:MAX_SUMMARY_CHARS],
            }
    if not phrases:
        raise ReplyFormatError("no <theme> with an id shown, a <name> and a <summary>")
    return phrases


class LlmThemePhraser:
    """Phrases themes with a chat model; the native names stand when it cannot.

    Args:
        model: The cheap model.
        policy: Retries, prompt directory, language preference.
    """

    def __init__(self, model: BaseChatModel, policy: CallPolicy) -> None:
        self.caller = ModelCaller(ROLE, model, policy)
        self.policy = policy

    def messages(self, materials: Sequence[ThemeMaterial], language: str) -> list[BaseMessage]:
        """The prompt: the system prompt, then the themes' material."""
        system = load_prompt(ROLE, language, self.policy.prompt_dir).render()
        body = load_prompt(f"{ROLE}_input", language, self.policy.prompt_dir).render(
            themes=render_material(materials)
        )
        return [SystemMessage(system), HumanMessage(body)]

    def phrase(self, materials: Sequence[ThemeMaterial]) -> dict[str, ThemePhrase]:
        """Theme id → phrase; empty when the model failed (one log line, never raised)."""
        if not materials:
            return {}
        language = detect_language(
            [" ".join([*m["keywords"], *m["units"]]) for m in materials], self.policy.language
        )
        known = {m["theme_id"] for m in materials}
        record = CallRecord(ROLE)

        def parse(reply: AIMessage) -> dict[str, ThemePhrase]:
            return parse_phrases(reply.text, known)

        return self.caller.guarded(
            record,
            lambda: self.caller.ask(
                self.messages(materials, language),
                parse,
                element=ELEMENT,
                language=language,
                record=record,
            ),
            dict,
            fallback_on_failure=True,
        )
