"""Which chat model serves which role: per role, else per tier, else none (native).

Tiering follows seed 000 §14: the splitter and the responder need the strong model; the topic
windows, the brief writer and the index router run on the cheap one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from langchain_core.language_models import BaseChatModel

from langgraph_topics.settings import ROLE_NAMES, Settings

Tier = Literal["strong", "cheap"]
ModelSpec = BaseChatModel | str
"""A chat model, or an ``init_chat_model`` string such as ``openai:gpt-4o-mini``."""

ROLE_TIERS: dict[str, Tier] = {
    "splitter": "strong",
    "responder": "strong",
    "topic_window": "cheap",
    "brief_writer": "cheap",
    "index_router": "cheap",
}


def role_model_specs(
    settings: Settings,
    *,
    strong: ModelSpec | None = None,
    cheap: ModelSpec | None = None,
    per_role: Mapping[str, ModelSpec] | None = None,
) -> dict[str, ModelSpec | None]:
    """The model spec of every role, the most specific source first.

    Order: ``per_role`` argument, ``settings.role_models``, the tier argument, the tier setting
    (``LANGGRAPH_TOPICS_STRONG_MODEL`` / ``LANGGRAPH_TOPICS_CHEAP_MODEL``). A tier left unset
    leaves its roles native: a strong model is never used for the cheap roles behind the user's
    back, since topic windows run once per active topic per turn.

    Raises:
        ValueError: ``per_role`` names an unknown role.
    """
    per_role = dict(per_role or {})
    unknown = sorted(set(per_role) - set(ROLE_NAMES))
    if unknown:
        raise ValueError(f"unknown roles {unknown}; known: {ROLE_NAMES}")
    tiers: dict[Tier, ModelSpec | None] = {
        "strong": strong if strong is not None else settings.strong_model,
        "cheap": cheap if cheap is not None else settings.cheap_model,
    }
    specs: dict[str, ModelSpec | None] = {}
    for role in ROLE_NAMES:
        chosen = per_role.get(role) or settings.role_models.get(role)
        specs[role] = chosen if chosen is not None else tiers[ROLE_TIERS[role]]
    return specs


def resolve_model(spec: ModelSpec | None, settings: Settings) -> BaseChatModel | None:
    """The chat model of a spec; a string goes through ``init_chat_model``.

    Models built from strings get the settings' timeout and no client-side retries (the role
    back ends retry with their own backoff, and count it). ``OPENAI_API_KEY`` and
    ``OPENAI_BASE_URL`` select an OpenAI-compatible endpoint as usual.
    """
    if spec is None or isinstance(spec, BaseChatModel):
        return spec
    from langchain.chat_models import init_chat_model

    return init_chat_model(spec, timeout=settings.model_timeout_seconds, max_retries=0)
