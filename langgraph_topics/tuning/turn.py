"""Write the tuning-log line of the turn that is ending (called by the last node of a turn)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from langgraph_topics.services import TopicServices, thread_directory_name
from langgraph_topics.state.records import TopicRecord, TurnEvent
from langgraph_topics.state.schema import TopicState
from langgraph_topics.tuning.log import append_line, tuning_line, tuning_log_path


def log_turn(
    services: TopicServices,
    thread_id: str,
    state: TopicState,
    topics: Mapping[str, TopicRecord],
    new_events: Sequence[TurnEvent] = (),
) -> None:
    """Drain the thread's role records and append the turn's line (unless logging is off).

    Args:
        services: The run's services (a dry run's never log).
        thread_id: The conversation thread.
        state: The state as the ending node received it.
        topics: The topic registry after the ending node's changes.
        new_events: Events the ending node adds (they are not in ``state`` yet).
    """
    records = services.role_stats.drain(thread_id)
    if not services.record_tuning or not services.settings.tuning_log:
        return
    line = tuning_line(
        time=services.clock().isoformat(),
        thread_id=thread_id,
        turn=state.get("turn", 0),
        mode=state.get("turn_mode", "chat"),
        topics=topics,
        results=state.get("topic_results") or {},
        context=state.get("context") if state.get("turn_mode", "chat") != "import" else None,
        events=[*(state.get("events") or []), *new_events],
        records=records,
        settings=services.settings,
    )
    path = tuning_log_path(services.settings.data_dir, thread_directory_name(thread_id))
    append_line(path, line)
