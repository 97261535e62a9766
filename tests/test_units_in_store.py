"""A quote's unit read from its neighbourhood equals the unit over the whole topic."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from langgraph_topics.state.records import StoredMessage
from langgraph_topics.state.units import group_units, unit_in_store
from langgraph_topics.stores.overlay import OverlayTopicStore
from langgraph_topics.stores.topic_store import JsonlTopicStore


def _messages(roles: list[str], prefix: str) -> list[StoredMessage]:
    return [{"id": f"{prefix}{i}", "role": role, "content": "text"} for i, role in enumerate(roles)]


@settings(max_examples=40, deadline=None)
@given(
    roles=st.lists(st.sampled_from(["user", "assistant", "assistant", "tool"]), max_size=120),
    long_run=st.integers(min_value=0, max_value=200),
)
def test_unit_in_store_matches_group_units(
    tmp_path_factory: object, roles: list[str], long_run: int
) -> None:
    # A long run without a user message forces the neighbourhood to widen.
    roles = [*roles, *(["assistant"] * long_run), "user", "assistant"]
    root = Path(tmp_path_factory.mktemp("units"))  # type: ignore[attr-defined]
    store = JsonlTopicStore(root)
    topic = store.create_topic("t", "b")["id"]
    store.append(topic, _messages(roles, "m"))
    reopened = JsonlTopicStore(root)  # from the file, not the append cache
    for unit in group_units(reopened.messages(topic)):
        for message in unit:
            got = unit_in_store(reopened, message["id"])
            assert [m["id"] for m in got] == [m["id"] for m in unit]


def test_unit_in_store_sees_a_dry_runs_appends(tmp_path: Path) -> None:
    base = JsonlTopicStore(tmp_path)
    topic = base.create_topic("t", "b")["id"]
    base.append(topic, _messages(["user", "assistant"], "a"))
    view = OverlayTopicStore(base)
    view.append(topic, _messages(["assistant", "user", "assistant"], "b"))
    assert [m["id"] for m in unit_in_store(view, "b0")] == ["a0", "a1", "b0"]
    assert [m["id"] for m in unit_in_store(view, "b2")] == ["b1", "b2"]
    assert unit_in_store(view, "nowhere") == []
