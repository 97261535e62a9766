"""Tokens of a whole model request: system message, messages and bound tools' schemas.

The budget a user sets is the budget of what the model is sent, not of topic memory's part of
it: the application's own system prompt and the schemas of the tools bound to the model are
part of every request (providers count a tool's JSON schema as prompt tokens). They are
counted with the package's token counter, the one the assembler fills the window with.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from langgraph_topics.errors import InputError
from langgraph_topics.settings import MIN_BUDGET_TOKENS
from langgraph_topics.state.messages import text_of, to_stored
from langgraph_topics.tokens import TokenCounter
from langgraph_topics.tokens.counting import message_tokens

JOIN_MARGIN = 4
"""Tokens kept aside where the app's prompt and the memory's are joined (a blank line between
them; a tokenizer may merge across the seam, so their separate counts can be a few short)."""


def tool_schema(tool: BaseTool | dict[str, Any]) -> dict[str, Any]:
    """The OpenAI-style schema a chat model is sent for ``tool``."""
    return tool if isinstance(tool, dict) else convert_to_openai_tool(tool)


def tools_tokens(tools: Sequence[BaseTool | dict[str, Any]], counter: TokenCounter) -> int:
    """Tokens of the tools' schemas, as JSON."""
    return sum(
        counter(json.dumps(tool_schema(t), ensure_ascii=False, sort_keys=True)) for t in tools
    )


def request_tokens(
    system: SystemMessage | None,
    messages: Sequence[BaseMessage],
    tools: Sequence[BaseTool | dict[str, Any]],
    counter: TokenCounter,
) -> int:
    """Tokens of a whole request, counted as the assembler counts its window.

    The system message by its text, every other message with its framing and tool calls
    (:func:`~langgraph_topics.tokens.counting.message_tokens`), every tool by its schema.
    """
    total = counter(text_of(system)) if system is not None else 0
    for message in messages:
        record = (
            to_stored(message) if message.id else to_stored(message.model_copy(update={"id": "-"}))
        )
        total += message_tokens(record, counter)
    return total + tools_tokens(tools, counter)


@dataclass(frozen=True)
class FixedParts:
    """The app's own parts of every request: its system prompt and its tools' schemas."""

    system: int
    tools: int
    tool_count: int

    @property
    def total(self) -> int:
        """What the memory's part of the budget gives way to (the seam's margin included)."""
        return self.system + self.tools + (JOIN_MARGIN if self.system else 0)

    @classmethod
    def of(
        cls,
        system_prompt: str | None,
        tools: Sequence[BaseTool | dict[str, Any]],
        counter: TokenCounter,
    ) -> FixedParts:
        """Count the app's system prompt (as joined to the memory's) and its tools."""
        system = counter(f"{system_prompt.rstrip()}\n\n") if system_prompt else 0
        return cls(system=system, tools=tools_tokens(tools, counter), tool_count=len(tools))

    def memory_budget(self, budget: int) -> int:
        """The budget left to topic memory's window.

        Raises:
            InputError: Less than ``MIN_BUDGET_TOKENS`` is left (one line saying what to do).
        """
        left = budget - self.total
        if left < MIN_BUDGET_TOKENS:
            raise InputError(
                f"budget_tokens={budget} is too small for this agent: its system prompt takes "
                f"{self.system} tokens and its {self.tool_count} tools' schemas {self.tools}, "
                f"leaving {left} for topic memory (at least {MIN_BUDGET_TOKENS}); raise "
                f"budget_tokens to {self.total + MIN_BUDGET_TOKENS} or more, or shorten the "
                "system prompt"
            )
        return left
