"""The assembled main window as LangChain messages, ready for any chat model."""

from __future__ import annotations

from langchain_core.messages import AnyMessage, SystemMessage

from langgraph_topics.state.messages import to_langchain
from langgraph_topics.state.records import AssembledContext


def context_messages(
    context: AssembledContext, system_prompt: str | None = None
) -> list[AnyMessage]:
    """The messages a chat model should see this turn.

    Args:
        context: The assembled window (``state["context"]`` after the ``assemble`` node).
        system_prompt: The application's own instructions; they come first, before the
            topic memory's system prompt (which carries the topic results).

    Returns:
        One system message, then the window's chat messages (unsplit ones, then the recent ones)
        in conversation order.
    """
    system = context["system_prompt"]
    if system_prompt:
        system = f"{system_prompt.rstrip()}\n\n{system}"
    return [SystemMessage(system), *(to_langchain(m) for m in context["messages"])]
