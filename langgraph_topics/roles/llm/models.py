"""Which chat model serves which role: per role, else per tier, else none (native).

Tiering follows seed 000 §14: the splitter and the responder need the strong model; the topic
windows, the brief writer and the index router run on the cheap one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Literal

from langchain_core.language_models import BaseChatModel

from langgraph_topics.errors import InputError, first_line
from langgraph_topics.settings import CHEAP_MODEL_ENV, ROLE_NAMES, STRONG_MODEL_ENV, Settings

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
    chosen = role_model_choices(settings, strong=strong, cheap=cheap, per_role=per_role)
    return {role: spec for role, (spec, _) in chosen.items()}


def role_model_choices(
    settings: Settings,
    *,
    strong: ModelSpec | None = None,
    cheap: ModelSpec | None = None,
    per_role: Mapping[str, ModelSpec] | None = None,
) -> dict[str, tuple[ModelSpec | None, str]]:
    """Like ``role_model_specs``, with where each spec came from (for error messages).

    The source is the environment variable when the spec is the variable's value (e.g.
    ``LANGGRAPH_TOPICS_STRONG_MODEL``), else the setting or the argument that gave it.

    Raises:
        ValueError: ``per_role`` names an unknown role.
    """
    per_role = dict(per_role or {})
    unknown = sorted(set(per_role) - set(ROLE_NAMES))
    if unknown:
        raise ValueError(f"unknown roles {unknown}; known: {ROLE_NAMES}")
    tier_env: dict[Tier, str] = {"strong": STRONG_MODEL_ENV, "cheap": CHEAP_MODEL_ENV}
    tiers: dict[Tier, tuple[ModelSpec | None, str]] = {
        "strong": (strong, "strong") if strong is not None else (settings.strong_model, ""),
        "cheap": (cheap, "cheap") if cheap is not None else (settings.cheap_model, ""),
    }
    choices: dict[str, tuple[ModelSpec | None, str]] = {}
    for role in ROLE_NAMES:
        tier = ROLE_TIERS[role]
        if per_role.get(role):
            choices[role] = (per_role[role], f"per_role[{role!r}]")
        elif settings.role_models.get(role):
            named = settings.role_models[role]
            variable = f"LANGGRAPH_TOPICS_{role.upper()}_MODEL"
            choices[role] = (named, _source(named, variable, f"Settings.role_models[{role!r}]"))
        else:
            spec, given = tiers[tier]
            field = f"Settings.{tier}_model"
            choices[role] = (spec, given or _source(spec, tier_env[tier], field))
    return choices


def _source(spec: ModelSpec | None, variable: str, field: str) -> str:
    return variable if isinstance(spec, str) and os.environ.get(variable) == spec else field


def resolve_model(
    spec: ModelSpec | None, settings: Settings, *, source: str = "model"
) -> BaseChatModel | None:
    """The chat model of a spec; a string goes through ``init_chat_model``.

    Models built from strings get the settings' timeout and no client-side retries (the role
    back ends retry with their own backoff, and count it). ``OPENAI_API_KEY`` and
    ``OPENAI_BASE_URL`` select an OpenAI-compatible endpoint as usual.

    Args:
        spec: A chat model, an ``init_chat_model`` string, or None (native).
        settings: Timeout of models built from strings.
        source: The setting or variable the spec came from, named in errors.

    Raises:
        InputError: A string naming no known provider, a provider whose package is not
            installed, or a model that cannot be created (a missing API key…): one line
            naming ``source`` and the spec.
    """
    if spec is None or isinstance(spec, BaseChatModel):
        return spec
    from langchain.chat_models import init_chat_model

    try:
        return init_chat_model(spec, timeout=settings.model_timeout_seconds, max_retries=0)
    except Exception as error:  # a provider SDK's own error type (openai.OpenAIError…)
        raise InputError(f"{source}={spec!r}: {_model_problem(spec, error)}") from error


_PROVIDERS = re.compile(r"Supported (?:model )?providers(?: are)?: *([a-z0-9_, ]+)")


def _model_problem(spec: str, error: Exception) -> str:
    """What is wrong with a model string, in one line."""
    text = str(error)
    if isinstance(error, ValueError) and (
        "infer model provider" in text or "Unsupported provider" in text
    ):
        prefix = spec.split(":", 1)[0] if ":" in spec else None
        found = _PROVIDERS.search(text)
        known = f" (known: {found.group(1).strip()})" if found else ""
        what = f"unknown model provider {prefix!r}" if prefix else "no model provider given"
        return f"{what}; write provider:model, e.g. openai:gpt-4o-mini{known}"
    if isinstance(error, ImportError):
        return first_line(text)
    return f"cannot create the model: {first_line(error)}"
