"""Import an existing LangChain chat history into topic memory, then ask about it.

Run: ``python examples/import_chat_history.py``.
"""

from __future__ import annotations

import tempfile
import warnings

from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from langgraph_topics import TopicMemory
from langgraph_topics.integrations import import_chat_history

EXCHANGES = [
    ("My sourdough starter smells like acetone. Is it dead?", "It is hungry: feed it twice a day."),
    ("How often should I feed it in the fridge?", "Once a week is enough in the fridge."),
    ("My loaf comes out dense and flat.", "Dense and flat usually means underproofed."),
    ("What hydration for a beginner's country loaf?", "Start around 70 percent hydration."),
    ("I'm planning a trip to Kyoto next April.", "Stay near Gion or Higashiyama."),
    ("Is Fushimi Inari better early or at sunset?", "Early in the morning, before 8."),
    ("Should I buy a JR pass for Nara and Osaka?", "No, a Kansai pass is cheaper."),
    ("Which ryokan near Gion for 30,000 yen?", "Try Gion Hatanaka, near Yasaka shrine."),
] * 3


def main() -> None:
    # Any BaseChatMessageHistory works (file, Redis, SQL, …); the in-memory one is deprecated
    # in favour of LangGraph checkpoints, which is what old applications are migrating from.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        history = InMemoryChatMessageHistory()
    history.add_message(SystemMessage("You are a helpful assistant."))
    for question, answer in EXCHANGES:
        history.add_messages([HumanMessage(question), AIMessage(answer)])
    with tempfile.TemporaryDirectory() as data_dir:
        with TopicMemory(data_dir=data_dir, budget_tokens=600) as memory:
            added = import_chat_history(memory, "bob", history)
            print(f"imported {added} messages into {len(memory.topics('bob'))} topics")
            assert added == 2 * len(EXCHANGES)  # the system message is not conversation
            # Importing again adds only what is new.
            history.add_messages([HumanMessage("Can I freeze the starter?"), AIMessage("Yes.")])
            assert import_chat_history(memory, "bob", history) == 2
            window = memory.context("bob", "How often should I feed the starter?")
            print(
                f"window: {window['context']['tokens']} tokens,"
                f" {len(window['context']['message_ids'])} messages"
            )
            for topic in memory.topics("bob"):
                print(f"- {topic['id']}: {topic['name'][:60]} ({topic['message_count']} messages)")
            assert memory.topics("bob") and memory.check("bob").ok


if __name__ == "__main__":
    main()
