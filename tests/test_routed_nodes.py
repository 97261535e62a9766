"""Nodes that name their successor read the state as LangGraph's channels would show it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from conftest import MemoryFactory
from conversations import SUBJECTS, subject_records
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph._internal._typing import MISSING
from langgraph.errors import EmptyChannelError
from langgraph.types import Command, Overwrite, Send

from langgraph_topics.graph import routing
from langgraph_topics.graph.builder import build_graph
from langgraph_topics.graph.routed import routed, state_only
from langgraph_topics.nodes.topic_window import topic_window
from langgraph_topics.services import TopicContext
from langgraph_topics.state.after_update import StateAfter, schema_reducers
from langgraph_topics.state.schema import TopicState, TopicWindowTask

GRAPH = build_graph()
STATE_KEYS = set(TopicState.__annotations__)

results = st.dictionaries(
    st.sampled_from(["t1", "t2", "t3"]),
    st.fixed_dictionaries({"relevance_score": st.floats(0, 1)}),
    max_size=3,
)
events = st.lists(st.fixed_dictionaries({"kind": st.sampled_from(["split", "activate"])}))
oversized = st.dictionaries(st.sampled_from(["t1", "t2"]), st.integers(0, 9000), max_size=2)
plain = {
    "activation": st.none() | st.fixed_dictionaries({"query": st.text(max_size=5)}),
    "searched": st.booleans(),
    "turn_mode": st.sampled_from(["chat", "import", "context", "assemble"]),
    "namespace_request": st.none() | st.text(max_size=5),
    "turn": st.integers(0, 50),
}
merged = {"topic_results": results, "events": events, "oversized_topics": oversized}


def _values(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return strategy | strategy.map(Overwrite)


states = st.fixed_dictionaries({}, optional={**plain, **merged})
updates = st.fixed_dictionaries(
    {}, optional={**plain, **{key: _values(value) for key, value in merged.items()}}
)


def as_channels_show_it(state: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """The state the next step reads: the graph's own channels, given the update."""
    shown: dict[str, Any] = {}
    for key in STATE_KEYS:
        channel = GRAPH.channels[key].from_checkpoint(state.get(key, MISSING))
        if key in update:
            channel.update([update[key]])
        try:
            shown[key] = channel.get()
        except EmptyChannelError:
            continue
    return shown


@settings(max_examples=300, deadline=None)
@given(states, updates)
def test_the_view_is_what_the_channels_show(state: dict[str, Any], update: dict[str, Any]) -> None:
    # A node's input holds every available channel: the merged keys are never absent.
    full = {key: value for key, value in as_channels_show_it(state, {}).items()}
    view = StateAfter(full, update)
    assert dict(view) == as_channels_show_it(full, update)


def test_the_reducers_are_the_schemas() -> None:
    assert set(schema_reducers(TopicState)) == {
        "messages",
        "topic_results",
        "events",
        "oversized_topics",
    }


def test_a_key_absent_from_state_and_update_is_absent() -> None:
    view = StateAfter({"turn": 1}, {"searched": True})
    assert view.get("activation") is None
    assert "activation" not in view
    assert dict(view) == {"turn": 1, "searched": True}


def test_a_routed_node_returns_its_update_and_the_route_on_it() -> None:
    def node(state: TopicState, runtime: Any) -> dict[str, Any]:
        return {"namespace_request": "namespace://tool/1", "events": [{"kind": "read"}]}

    step = routed(node, state_only(routing.after_respond))
    command = step({"events": [], "activation": None}, runtime=None)  # type: ignore[arg-type]
    assert isinstance(command, Command)
    assert command.update == node({}, None)  # type: ignore[arg-type]
    assert command.goto == "assemble"
    assert step.__name__ == "node"


def test_the_fan_out_goes_out_as_send_tasks() -> None:
    step = routed(lambda state, runtime: {"activation": None}, routing.after_recall_cue)

    class Runtime:
        context = None

    state = {
        "messages": [],
        "topics": {"t1": {"status": "active"}, "t2": {"status": "dormant"}},
        "topic_results": {},
    }
    command = step(state, runtime=Runtime())  # type: ignore[arg-type]
    assert isinstance(command.goto, list)
    assert [send.node for send in command.goto if isinstance(send, Send)] == ["topic_window"]
    assert command.goto[0].arg["window_task"]["topic_id"] == "t1"


def test_a_window_task_saved_by_an_earlier_version_is_still_read(
    make_memory: MemoryFactory,
) -> None:
    # A turn cut short keeps its pending Send tasks; one saved before the payload took one key
    # carries the task's keys at the top, and resuming it must not fail the thread forever.
    memory = make_memory(budget=900)
    memory.import_messages("t", subject_records(list(SUBJECTS)))
    topic_id = memory.topics("t")[0]["id"]
    task: TopicWindowTask = {
        "thread_id": "t",
        "topic_id": topic_id,
        "round": 0,
        "unsplit": [
            {"id": "q1", "role": "user", "content": "What about the ryokan?", "timestamp": ""}
        ],
        "store_ranges": memory.state("t").get("store_ranges"),
    }
    runtime = SimpleNamespace(context=TopicContext(services=memory.services), execution_info=None)
    nested = topic_window({"window_task": task}, runtime=runtime)  # type: ignore[arg-type]
    flat = topic_window(cast(Any, dict(task)), runtime=runtime)  # type: ignore[arg-type]
    assert nested["topic_results"][topic_id]["topic_id"] == topic_id
    assert flat == nested
