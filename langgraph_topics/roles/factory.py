"""Build the five roles: an LLM back end where a model is configured, the native one elsewhere."""

from __future__ import annotations

from collections.abc import Mapping

from langgraph_topics.roles.llm.brief_writer import LlmBriefWriter
from langgraph_topics.roles.llm.calling import CallPolicy
from langgraph_topics.roles.llm.index_router import LlmIndexRouter
from langgraph_topics.roles.llm.models import ModelSpec, resolve_model, role_model_choices
from langgraph_topics.roles.llm.responder import LlmResponder
from langgraph_topics.roles.llm.splitter import LlmSplitter
from langgraph_topics.roles.llm.theme_phrasing import LlmThemePhraser
from langgraph_topics.roles.llm.topic_window import LlmTopicWindow
from langgraph_topics.roles.native import native_roles
from langgraph_topics.roles.protocols import Roles
from langgraph_topics.settings import Settings
from langgraph_topics.stores.protocols import Embedder


def build_roles(
    settings: Settings | None = None,
    *,
    strong: ModelSpec | None = None,
    cheap: ModelSpec | None = None,
    per_role: Mapping[str, ModelSpec] | None = None,
    embedder: Embedder | None = None,
    policy: CallPolicy | None = None,
) -> Roles:
    """The role back ends the settings and arguments ask for.

    Args:
        settings: Models (``strong_model``, ``cheap_model``, ``role_models``, from the
            ``LANGGRAPH_TOPICS_*_MODEL`` variables by default), retries, prompt directory.
        strong: The splitter's and responder's model (a chat model or an ``init_chat_model``
            string); overrides ``settings.strong_model``.
        cheap: The topic window's, brief writer's and index router's model; overrides
            ``settings.cheap_model``.
        per_role: Models of single roles (``splitter``, ``topic_window``, ``brief_writer``,
            ``index_router``, ``responder``); override the tiers.
        embedder: The native back ends' embedder (the offline default when omitted); the native
            back ends serve roles without a model and calls whose replies stay malformed.
        policy: Retry and prompt policy (from the settings when omitted).

    Returns:
        The roles. With no model anywhere, exactly the native roles (no theme phraser; with a
        brief writer model, that model also phrases ``themes``/``trace``). A responder model that
        cannot bind tools (``bind_tools`` raises ``NotImplementedError``) answers without the
        ``activate_topic`` tool (one log line per model and process).

    Raises:
        InputError: A model string that cannot be turned into a model (an unknown provider,
            a missing package or API key), naming the setting it came from.
    """
    settings = settings or Settings()
    if embedder is None:
        from langgraph_topics.stores.embeddings import UseEmbedder

        embedder = UseEmbedder()
    native = native_roles(embedder, settings)
    choices = role_model_choices(settings, strong=strong, cheap=cheap, per_role=per_role)
    models = {
        role: resolve_model(spec, settings, source=source)
        for role, (spec, source) in choices.items()
    }
    policy = policy or CallPolicy.from_settings(settings)

    roles = Roles(**native.__dict__)
    if (model := models["splitter"]) is not None:
        roles.splitter = LlmSplitter(
            model, native.splitter, policy, brief_bytes=settings.brief_bytes
        )
    if (model := models["topic_window"]) is not None:
        roles.topic_window = LlmTopicWindow(
            model,
            native.topic_window,
            policy,
            summary_chars=settings.summary_soft_limit_chars,
            summaries=settings.topic_window_summaries,
            context_tokens=settings.topic_window_context_tokens,
            cache_breakpoints=settings.cache_breakpoints,
        )
    if (model := models["brief_writer"]) is not None:
        roles.brief_writer = LlmBriefWriter(
            model, native.brief_writer, policy, brief_bytes=settings.brief_bytes
        )
        # Themes are phrased by the brief writer's model: both only word what is given.
        roles.theme_phraser = LlmThemePhraser(model, policy)
    if (model := models["index_router"]) is not None:
        roles.index_router = LlmIndexRouter(model, native.index_router, policy)
    if (model := models["responder"]) is not None:
        roles.responder = LlmResponder(model, native.responder, policy)
    return roles
