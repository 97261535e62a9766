"""The assembled main window as LangChain messages, ready for any chat model."""

from __future__ import annotations

from langchain_core.messages import AnyMessage, SystemMessage

from langgraph_topics.state.messages import to_langchain
from langgraph_topics.state.records import AssembledContext
from langgraph_topics.state.turn_order import joined_turns


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
        in conversation order; in an alternating window (``Settings.alternating_roles``) the
        chat opens with a user message and messages of one role in a row are joined.
    """
    system = context["system_prompt"]
    if system_prompt:
        system = f"{system_prompt.rstrip()}\n\n{system}"
    chat = [to_langchain(m) for m in context["messages"]]
    if context.get("alternating"):
        chat = joined_turns(chat)
    return [SystemMessage(system), *chat]
