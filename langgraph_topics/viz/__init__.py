"""Pictures of a thread's topics (hierarchy, timeline, activation)."""

from langgraph_topics.viz.topic_map import (
    MapRow,
    TopicMapInput,
    draw_topic_map,
    topic_map_figure,
    topic_map_markdown,
    topic_map_mermaid,
    topic_map_paths,
    topic_map_rows,
    topic_timeline_mermaid,
    write_topic_map,
)

__all__ = [
    "MapRow",
    "TopicMapInput",
    "draw_topic_map",
    "topic_map_figure",
    "topic_map_markdown",
    "topic_map_mermaid",
    "topic_map_paths",
    "topic_map_rows",
    "topic_timeline_mermaid",
    "write_topic_map",
]
