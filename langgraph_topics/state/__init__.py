"""State schema, reducers and typed records of the topic-memory graph."""

from langgraph_topics.state.records import (
    ActivationRequest,
    AssembledContext,
    EstimateRecord,
    SectionTokens,
    StoredMessage,
    TopicMeta,
    TopicRecord,
    TopicResult,
    TrimRecord,
    TurnEvent,
)
from langgraph_topics.state.schema import (
    InputState,
    Mode,
    TopicState,
    TopicWindowInput,
    TopicWindowTask,
)

__all__ = [
    "ActivationRequest",
    "AssembledContext",
    "EstimateRecord",
    "InputState",
    "Mode",
    "SectionTokens",
    "StoredMessage",
    "TopicMeta",
    "TopicRecord",
    "TopicResult",
    "TopicState",
    "TopicWindowInput",
    "TopicWindowTask",
    "TrimRecord",
    "TurnEvent",
]
