"""Put topic memory in front of a chat model: each call sends only the new user message.

Offline, a scripted fake model stands in; with a real provider use for example
``init_chat_model("openai:gpt-4o-mini")`` instead. Run: ``python examples/chat_model_wrapper.py``.
"""

from __future__ import annotations

import tempfile
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableLambda

from langgraph_topics import TopicMemory
from langgraph_topics.integrations import with_topic_memory

seen: list[list[BaseMessage]] = []


def scripted_model(messages: list[BaseMessage]) -> AIMessage:
    """Stands in for a chat model: reports what topic memory put in front of it."""
    seen.append(messages)
    return AIMessage(f"(a model answer, having seen {len(messages)} messages)")


def main() -> None:
    turns = [
        "My sourdough starter smells like acetone. Is it dead?",
        "It's fine now. Let's plan a trip to Kyoto next April.",
        "Which neighbourhood in Kyoto is best to stay in?",
        "Back to the starter: how often should I feed it in the fridge?",
    ]
    with tempfile.TemporaryDirectory() as data_dir:
        with TopicMemory(data_dir=data_dir, budget_tokens=2000) as memory:
            chat = with_topic_memory(
                RunnableLambda(scripted_model), memory, system_prompt="You are a kind assistant."
            )
            config: Any = {"configurable": {"thread_id": "alice"}}
            for text in turns:
                reply = chat.invoke(text, config)
                print(f"> {text}\n{reply.content}")
            assert len(seen) == len(turns)
            first, last = seen[0], seen[-1]
            assert first[0].type == "system" and "kind assistant" in str(first[0].content)
            # Every turn the model sees the system prompt and the whole (short) conversation.
            assert len(last) == 1 + 2 * len(turns) - 1
            assert memory.check("alice").ok
            print(f"{memory.state('alice')['total_messages']} messages recorded")


if __name__ == "__main__":
    main()
