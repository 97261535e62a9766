"""An offline tool-calling chat model, for the examples, the notebook and the tests."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field


class ToolCallingFakeModel(BaseChatModel):
    """A scripted chat model that calls tools, for running agents offline.

    Each call looks at the last message it is given:

    - a user message holding the trigger of a bound tool (``triggers``: trigger → tool name,
      matched case-insensitively) → one call of each such tool, with the user's text as the
      tool's first argument (several triggers: several calls in one message);
    - a tool result → an answer that quotes it;
    - anything else → an answer repeating the last message (``Re: …``).

    Every call's input and bound tool names are kept in ``calls`` and ``bound_tools``.

    Example:
        >>> model = ToolCallingFakeModel(triggers={"look up": "lookup"})
        >>> agent = create_agent(model, [lookup])  # doctest: +SKIP
    """

    triggers: dict[str, str] = Field(default_factory=dict)
    calls: list[list[BaseMessage]] = Field(default_factory=list)
    bound_tools: list[list[str]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "tool-calling-fake"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools (as OpenAI tool schemas); the calls name them and fill their first arg."""
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        schemas: list[dict[str, Any]] = kwargs.get("tools") or []
        first_arg = {
            schema["function"]["name"]: next(
                iter(schema["function"].get("parameters", {}).get("properties", {})), "input"
            )
            for schema in schemas
        }
        self.calls.append(list(messages))
        self.bound_tools.append(list(first_arg))
        last = messages[-1]
        text = last.text
        if isinstance(last, ToolMessage):
            reply = AIMessage(f"Here is what I found: {text}")
        elif isinstance(last, HumanMessage):
            wanted = {
                name
                for trigger, name in self.triggers.items()
                if trigger.lower() in text.lower() and name in first_arg
            }
            calls = [
                ToolCall(name=name, args={first_arg[name]: text}, id=f"call-{uuid.uuid4().hex}")
                for name in sorted(wanted)
            ]
            reply = AIMessage("", tool_calls=calls) if calls else AIMessage(f"Re: {text}")
        else:
            reply = AIMessage(f"Re: {text}")
        return ChatResult(generations=[ChatGeneration(message=reply)])
