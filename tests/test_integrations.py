"""Embedding topic memory: chat-model wrapper, history import, nodes of a user's graph."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conversations import subject_records
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableLambda

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.integrations import (
    context_messages,
    import_chat_history,
    new_user_message,
    with_topic_memory,
)
from langgraph_topics.stores.embeddings import UseEmbedder


@pytest.fixture
def memory(tmp_path: Path, embedder: UseEmbedder) -> Any:
    settings = Settings(data_dir=tmp_path / "m", budget_tokens=500, keep_recent=6)
    with TopicMemory(settings=settings, embedder=embedder) as memory:
        yield memory


def test_new_user_message_takes_the_last_user_turn() -> None:
    assert new_user_message("hi").content == "hi"
    assert new_user_message([("user", "a"), ("assistant", "b"), ("user", "c")]).content == "c"
    assert new_user_message({"role": "user", "content": "d"}).content == "d"
    with pytest.raises(ValueError):
        new_user_message([AIMessage("only a reply")])


def test_wrapper_calls_the_model_with_the_assembled_window(memory: TopicMemory) -> None:
    memory.import_messages("t", subject_records(["sourdough", "kyoto", "stocks"]))
    model = FakeListChatModel(responses=["Feed it once a week."])
    calls: list[list[BaseMessage]] = []

    def spy(messages: list[BaseMessage]) -> BaseMessage:
        calls.append(messages)
        return model.invoke(messages)

    chat = with_topic_memory(RunnableLambda(spy), memory, system_prompt="Be brief.")
    reply = chat.invoke(
        [HumanMessage("How often should I feed my sourdough starter in the fridge?")],
        {"configurable": {"thread_id": "t"}},
    )
    assert isinstance(reply, AIMessage) and reply.content == "Feed it once a week."
    (sent,) = calls
    assert isinstance(sent[0], SystemMessage) and str(sent[0].content).startswith("Be brief.")
    window = memory.state("t")["context"]
    assert [m.id for m in sent[1:]] == [m["id"] for m in window["messages"]]
    # The topic results reached the model through the system prompt.
    assert window["topic_ids"] and "starter" in str(sent[0].content)
    # The reply is recorded under the id the wrapper returned; the invariants hold.
    assert memory.transcript("t")[-1] == {**memory.transcript("t")[-1], "id": reply.id}
    assert memory.transcript("t")[-1]["content"] == "Feed it once a week."
    assert memory.check("t").ok


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_history_import_is_incremental(memory: TopicMemory) -> None:
    history = InMemoryChatMessageHistory()
    history.add_message(SystemMessage("ignored"))
    for record in subject_records(["kyoto", "fitness"]):
        cls = HumanMessage if record["role"] == "user" else AIMessage
        history.add_message(cls(record["content"]))
    assert import_chat_history(memory, "h", history) == 16
    assert import_chat_history(memory, "h", history) == 0
    history.add_messages([HumanMessage("One more question"), AIMessage("One more answer")])
    assert import_chat_history(memory, "h", history) == 2
    transcript = memory.transcript("h")
    assert len(transcript) == 18 and transcript[0]["id"] == "history-000001"
    assert memory.topics("h") and memory.check("h").ok


def test_context_messages_put_the_application_prompt_first(memory: TopicMemory) -> None:
    memory.chat("c", "hello")
    messages = context_messages(memory.state("c")["context"], "App rules.")
    assert messages[0].type == "system" and str(messages[0].content).startswith("App rules.")
    assert [m.type for m in messages[1:]] == ["human"]  # assembled before the reply
