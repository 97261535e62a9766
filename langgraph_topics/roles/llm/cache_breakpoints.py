"""Explicit prompt-cache breakpoints (seed 000 §12): caching where a provider needs them marked.

OpenAI-style providers cache the longest repeated prefix by themselves. Others (Anthropic) read
a cache only up to a breakpoint the request marks: without one, the append-only topic prompts
that make the design cheap are paid in full on every call. A role marks the end of its stable
prefix (the instructions and the topic's split messages), in the model's own format.
"""

from __future__ import annotations

from typing import Any

ANTHROPIC_MARK: dict[str, Any] = {"cache_control": {"type": "ephemeral"}}
OPENAI_MARK: dict[str, Any] = {"prompt_cache_breakpoint": {"mode": "explicit"}}
_ANTHROPIC_NAMES = ("anthropic", "claude")


def _base_model(model: object) -> object:
    """The chat model under wrappers such as ``bind_tools`` or ``with_retry``."""
    for _ in range(5):
        inner = getattr(model, "bound", None)
        if inner is None:
            break
        model = inner
    return model


def caches_only_at_breakpoints(model: object) -> bool:
    """Whether the model's provider reads a prompt cache only up to marked breakpoints."""
    base = _base_model(model)
    kind = f"{type(base).__name__} {getattr(base, '_llm_type', '')}".lower()
    return any(name in kind for name in _ANTHROPIC_NAMES)


def breakpoint_mark(model: object, setting: bool | None) -> dict[str, Any] | None:
    """The keys that mark a content block as a breakpoint for this model (None: no marking).

    Args:
        model: The role's chat model.
        setting: ``Settings.cache_breakpoints``: None marks for the providers that need it,
            True for every model, False for none.
    """
    if setting is False or (setting is None and not caches_only_at_breakpoints(model)):
        return None
    return ANTHROPIC_MARK if caches_only_at_breakpoints(model) else OPENAI_MARK


def marked_content(stable: str, rest: str, mark: dict[str, Any] | None) -> str | list[Any]:
    """A message's content: the stable prefix, then the rest.

    With a mark: two text blocks, the first ending at the breakpoint.
    """
    if mark is None:
        return stable + rest
    return [{"type": "text", "text": stable, **mark}, {"type": "text", "text": rest}]
