"""How many topic windows of a turn run at once (graph/concurrency.py)."""

from __future__ import annotations

from conftest import MemoryFactory
from fakes import FixedScoreTopicWindow, with_roles

from langgraph_topics.graph.concurrency import IN_PROCESS_WINDOW_THREADS, fan_out_threads
from langgraph_topics.roles.protocols import Roles


def test_native_windows_run_on_a_few_threads_and_others_all_at_once(roles: Roles) -> None:
    # The native window works on this process's CPU; a window of another kind (a model's,
    # an application's own) may wait on the network, so every active topic is read at once.
    assert fan_out_threads(roles, 20) <= IN_PROCESS_WINDOW_THREADS
    assert fan_out_threads(roles, 1) == 1
    other = with_roles(roles, topic_window=FixedScoreTopicWindow(lambda topic: 0.5))
    assert fan_out_threads(other, 20) == 20


def test_a_memorys_run_config_takes_its_windows_kind_into_account(
    make_memory: MemoryFactory, roles: Roles
) -> None:
    native = make_memory(roles=roles)
    assert native.run_config("t")["max_concurrency"] <= IN_PROCESS_WINDOW_THREADS
    fixed = FixedScoreTopicWindow(lambda topic: 0.5)
    other = make_memory(roles=with_roles(roles, topic_window=fixed))
    assert other.run_config("t")["max_concurrency"] == other.settings.max_active
