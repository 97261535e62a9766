"""Topic memory as middleware of a LangChain agent (``create_agent``), tools included.

Before each model call the middleware records the new messages and gives the model the
assembled window instead of the whole history; after it, it records the reply (tool calls
too) and updates the topic scores. The agent's own ``messages`` keep only what topic memory
has not split into topics. Offline, a scripted tool-calling fake stands in for the model; with
a real provider pass for example ``"openai:gpt-4o"`` to ``create_agent`` instead.
Run: ``python examples/create_agent_middleware.py``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.middleware import TopicMemoryMiddleware
from langgraph_topics.middleware.fakes import ToolCallingFakeModel


@tool
def weather(city: str) -> str:
    """Today's weather forecast for a city."""
    return f"Forecast: mild and sunny, 18 °C, light wind ({city[:40]})."


# Calls ``weather`` when the user's message says "weather", then answers from the result.
model = ToolCallingFakeModel(triggers={"weather": "weather"})

QUESTIONS = [
    "My sourdough starter smells like acetone. Is it dead?",
    "How often should I feed the starter if I keep it in the fridge?",
    "My loaf comes out dense and flat. Underproofed or overproofed?",
    "I'm planning a trip to Kyoto next April. Which neighbourhood is best to stay in?",
    "What will the weather be like in Kyoto this week?",
    "Is the Fushimi Inari shrine better early in the morning or at sunset?",
    "Should I buy a JR pass for day trips to Nara and Osaka?",
    "And the weather in Nara for a day trip?",
    "Back to bread: what hydration should a beginner use for a country loaf?",
]


def main() -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        settings = Settings(data_dir=Path(data_dir), budget_tokens=600, keep_recent=6)
        with TopicMemory(settings=settings) as memory:
            agent = create_agent(
                model,
                [weather],
                system_prompt="You are a concise travel and baking assistant.",
                middleware=[TopicMemoryMiddleware(memory)],
                checkpointer=InMemorySaver(),
            )
            config: Any = {"configurable": {"thread_id": "alice"}}
            for question in QUESTIONS:
                result = agent.invoke({"messages": [("user", question)]}, config)
                print(f"> {question}\n{result['messages'][-1].content}")

            # The model saw the window: the system prompt (with the topic results), then the
            # unsplit and recent messages, never the whole history.
            window = memory.state("alice")["context"]
            print(f"last window: {window['tokens']} of {window['budget']} tokens")
            for topic in memory.topics("alice"):
                print(f"topic {topic['name']!r}: {topic['status']}, scores {topic['scores']}")

            # Nothing lost: the agent's messages and the topic files partition the thread, and
            # both tool exchanges are recorded, each call with its result.
            report = memory.check("alice")
            assert report.ok, report.findings
            kept = agent.get_state(config).values["messages"]
            assert report.counts["split"] > 0 and len(kept) == report.counts["unsplit"]
            transcript = memory.transcript("alice")
            calls = [c["id"] for m in transcript for c in m.get("tool_calls", [])]  # type: ignore[union-attr]
            results = [m["tool_call_id"] for m in transcript if m["role"] == "tool"]
            assert len(calls) == 2 and calls == results
            print(
                f"{report.counts['total']} messages: {report.counts['split']} in topics, "
                f"{len(kept)} still in the agent's state"
            )


if __name__ == "__main__":
    main()
