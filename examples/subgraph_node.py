"""Topic memory as nodes of your own LangGraph graph, sharing ``messages`` with it.

Your state extends ``TopicState``; ``topic_context`` assembles the window before your model
node, ``topic_bookkeeping`` closes the turn after it. Run: ``python examples/subgraph_node.py``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from langgraph_topics import Settings, TopicServices
from langgraph_topics.integrations import (
    context_messages,
    topic_bookkeeping_node,
    topic_context_node,
)
from langgraph_topics.state.schema import TopicState


class AppState(TopicState, total=False):
    """The application's state: topic memory's keys plus its own."""

    replies: int
    """How many answers the model gave (an example of an application key)."""


# Offline stand-in for a chat model; use ``init_chat_model(...)`` with a real provider.
model = RunnableLambda(lambda messages: AIMessage(f"(answer from {len(messages)} messages)"))


def agent(state: AppState) -> dict[str, Any]:
    """The application's model node: it reads the assembled window, not the raw history."""
    messages: list[BaseMessage] = context_messages(state["context"], "Be brief.")
    return {"messages": [model.invoke(messages)], "replies": state.get("replies", 0) + 1}


def build_app(services: TopicServices) -> Any:
    builder = StateGraph(AppState)
    builder.add_node("topic_context", topic_context_node(services))
    builder.add_node("agent", agent)
    builder.add_node("topic_bookkeeping", topic_bookkeeping_node(services))
    builder.add_edge(START, "topic_context")
    builder.add_edge("topic_context", "agent")
    builder.add_edge("agent", "topic_bookkeeping")
    builder.add_edge("topic_bookkeeping", END)
    return builder.compile(checkpointer=InMemorySaver())


def main() -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        settings = Settings(data_dir=Path(data_dir), budget_tokens=300, keep_recent=4)
        services = TopicServices.open(settings)
        app = build_app(services)
        config: Any = {"configurable": {"thread_id": "carol"}}
        questions = [
            "My sourdough starter smells like acetone. Is it dead?",
            "How often should I feed it in the fridge?",
            "I'm planning a trip to Kyoto next April. Where should I stay?",
            "Is Fushimi Inari better early in the morning or at sunset?",
            "Should I buy a JR pass for day trips to Nara and Osaka?",
            "Back to bread: what hydration should a beginner use?",
        ]
        for question in questions:
            state = app.invoke({"messages": [HumanMessage(question)]}, config)
            print(f"> {question}\n{state['messages'][-1].content}")
        store = services.stores("carol").topic_store
        split = set(store.message_ids())
        working = [m.id for m in state["messages"]]
        print(f"{len(split)} messages in {len(store.topic_ids())} topics, {len(working)} unsplit")
        # Nothing lost, nothing twice: the app's messages and the topics partition the thread.
        assert split and not split & set(working)
        assert len(split) + len(working) == state["total_messages"] == 2 * len(questions)
        assert state["replies"] == len(questions)


if __name__ == "__main__":
    main()
