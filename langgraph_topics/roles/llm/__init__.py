"""LLM back ends of the model roles: prompt files in, strictly parsed XML replies out.

Every back end renders its prompt from ``prompts/`` (message text escaped so that it cannot
change what is parsed), retries provider failures with backoff, retries a malformed reply once
with the error fed back, and otherwise hands the call to the native back end of the same role.
"""

from langgraph_topics.roles.llm.brief_writer import LlmBriefWriter
from langgraph_topics.roles.llm.calling import CallPolicy, ModelCaller
from langgraph_topics.roles.llm.index_router import LlmIndexRouter
from langgraph_topics.roles.llm.responder import ACTIVATE_TOPIC_TOOL, LlmResponder
from langgraph_topics.roles.llm.splitter import LlmSplitter
from langgraph_topics.roles.llm.theme_phrasing import LlmThemePhraser
from langgraph_topics.roles.llm.topic_window import LlmTopicWindow
from langgraph_topics.roles.llm.xml_reply import ReplyFormatError

__all__ = [
    "ACTIVATE_TOPIC_TOOL",
    "CallPolicy",
    "LlmBriefWriter",
    "LlmIndexRouter",
    "LlmResponder",
    "LlmSplitter",
    "LlmThemePhraser",
    "LlmTopicWindow",
    "ModelCaller",
    "ReplyFormatError",
]
