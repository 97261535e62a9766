"""Build a long synthetic thread directly in the stores and the checkpoint.

Importing 100,000 messages turn by turn would take hours and measure the import, not a turn.
Instead the topic files are written with one append per topic, the briefs indexed once, and
the registry and working set written to the checkpoint with ``update_state``: the state a
thread of that length reaches, without replaying how it got there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage

from langgraph_topics.memory import TopicMemory
from langgraph_topics.state.records import StoredMessage, TopicRecord, TopicStatus
from langgraph_topics.stores.protocols import BranchedTopicStore
from langgraph_topics.stores.seq_ranges import as_state

_WORDS = (
    "budget travel recipe garden stock market kyoto train bread starter piano lesson "
    "marathon knee doctor insurance rent contract python deploy server cache paint dog"
).split()


def message_text(number: int) -> str:
    """A plausible ~100-character message (varied words, so texts differ)."""
    words = [_WORDS[(number * 7 + k * 3) % len(_WORDS)] for k in range(14)]
    return f"Message {number}: " + " ".join(words) + "."


def _messages(
    start: int,
    count: int,
    origin: datetime,
    text: Callable[[int], str] = message_text,
    seconds_apart: float = 30.0,
) -> Iterator[StoredMessage]:
    for number in range(start, start + count):
        yield {
            "id": f"m{number}",
            "role": "user" if number % 2 == 0 else "assistant",
            "content": text(number),
            "timestamp": (origin + timedelta(seconds=seconds_apart * number)).isoformat(),
        }


def seed_thread(
    memory: TopicMemory,
    thread: str,
    *,
    history: int,
    topics: int,
    active: int,
    working: int = 30,
    text: Callable[[int], str] = message_text,
    seconds_apart: float = 30.0,
) -> None:
    """Give ``thread`` ``history`` messages: all but ``working`` of them spread over topics.

    Args:
        memory: The memory whose stores and checkpoint receive the thread.
        thread: Thread id.
        history: Messages in the thread.
        topics: Topics holding the split messages (evenly).
        active: How many of them are active (the rest dormant).
        working: Messages left unsplit in the working set (the newest).
        text: The text of message number ``n`` (default: :func:`message_text`).
        seconds_apart: Time between two messages.
    """
    origin = datetime(2024, 1, 1, tzinfo=UTC)
    stores = memory.services.stores(thread)
    split = max(0, history - working)
    registry: dict[str, TopicRecord] = {}
    per_topic, extra = divmod(split, topics)
    start = 0
    now = origin.isoformat()
    for index in range(topics):
        count = per_topic + (1 if index < extra else 0)
        name = f"topic {index}: {' / '.join(_WORDS[(index + k) % len(_WORDS)] for k in range(3))}"
        brief = f"Keywords: {name}\n- user: {text(start)}"
        meta = stores.topic_store.create_topic(name, brief, created_at=now)
        messages = list(_messages(start, count, origin, text, seconds_apart))
        stores.topic_store.append(meta["id"], messages)
        # Split history is indexed at split time (embeddings on disk); so is this one.
        stores.message_index.add(messages, [meta["id"]] * count)
        status: TopicStatus = "active" if index < active else "dormant"
        stores.topic_index.upsert(meta["id"], name, brief, status=status)
        registry[meta["id"]] = {
            "id": meta["id"],
            "name": name,
            "status": status,
            "parent_id": None,
            "scores": [0.6],
            "created_at": now,
            "last_active_at": now,
            "message_count": count,
        }
        start += count
    recent: list[AnyMessage] = []
    for record in _messages(split, history - split, origin, text, seconds_apart):
        cls = HumanMessage if record["role"] == "user" else AIMessage
        recent.append(cls(record["content"], id=record["id"]))
    memory.graph.update_state(
        {"configurable": {"thread_id": thread}},
        {
            "messages": recent,
            "topics": registry,
            "total_messages": history,
            "last_seen_id": recent[-1].id if recent else None,
            "turn": 0,
            **(
                {"store_ranges": as_state(stores.topic_store.visible_ranges())}
                if isinstance(stores.topic_store, BranchedTopicStore)
                else {}
            ),
        },
        as_node="bookkeeping",
    )
