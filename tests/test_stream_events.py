"""Studio-friendly graph: custom stream events for split, activation, dormancy and recall cues."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conversations import subject_records
from langchain_core.messages import HumanMessage

from langgraph_topics import Settings, TopicContext, TopicMemory
from langgraph_topics.stores.embeddings import UseEmbedder

TURNS = [
    "How often should I feed the sourdough starter?",
    "Nice weather today",
    "Let's talk about something else: my bike tyre",
    "What about cars?",
    "你忘了吗？我之前说过股票市盈率的事",
    "Which ryokan near Gion?",
]


def test_custom_events_reach_the_stream_and_the_state(
    tmp_path: Path, embedder: UseEmbedder
) -> None:
    settings = Settings(
        data_dir=tmp_path / "memory",
        budget_tokens=600,
        keep_recent=4,
        min_active=1,
        default_active=1,
        max_active=3,
    )
    with TopicMemory(settings=settings, embedder=embedder) as memory:
        memory.import_messages("t", subject_records(["stocks", "kyoto", "sourdough", "fitness"]))
        config: Any = {"configurable": {"thread_id": "t"}, "recursion_limit": 100}
        custom: list[dict[str, Any]] = []
        updated_nodes: set[str] = set()
        state_kinds: set[str] = set()
        for text in TURNS:
            for mode, chunk in memory.graph.stream(
                {"messages": [HumanMessage(text)], "mode": "chat"},
                config,
                stream_mode=["custom", "updates"],
                context=TopicContext(services=memory.services),
            ):
                if mode == "custom":
                    custom.append(chunk)
                else:
                    updated_nodes.update(chunk)
            state_kinds.update(e["kind"] for e in memory.state("t").get("events", []))

    kinds = {event["event"] for event in custom}
    assert {"split", "activated", "dormant", "recall_cue"} <= kinds
    # Each node's output is visible as a state update (what Studio shows step by step).
    assert {"estimate", "split", "recall_cue", "topic_window", "assemble", "respond"} <= (
        updated_nodes
    )
    assert {"activate", "bookkeeping"} <= updated_nodes
    # The same happenings are kept in the state's per-turn ``events``.
    assert {"split", "dormant", "recall_cue"} <= state_kinds
    split = next(e for e in custom if e["event"] == "split")
    assert split["messages"] > 0 and split["topics"]
    recall = next(e for e in custom if e["event"] == "recall_cue")
    assert recall["cue"] == "你忘了"
