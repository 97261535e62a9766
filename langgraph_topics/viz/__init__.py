"""Pictures of a thread's topics (hierarchy, timeline, activation)."""

from langgraph_topics.viz.topic_map import (
    TopicMapInput,
    draw_topic_map,
    topic_map_mermaid,
    write_topic_map,
)

__all__ = ["TopicMapInput", "draw_topic_map", "topic_map_mermaid", "write_topic_map"]
