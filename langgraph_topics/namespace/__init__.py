"""The tool-result namespace (seed 001 T2): large tool results leave the window, by reference.

See ``namespace.window`` (not imported here: it needs the stores) for how a window shows
them and ``stores.namespace_store`` for where the full texts are kept.
"""

from langgraph_topics.namespace.policy import (
    BYTE_THRESHOLD,
    LINE_THRESHOLD,
    SEED_LARGE_TOOLS,
    NamespacePolicy,
)
from langgraph_topics.namespace.preview import key_information
from langgraph_topics.namespace.reference import (
    REFERENCE_PREFIX,
    digest_of,
    find_references,
    reference_for,
)
from langgraph_topics.namespace.tool import READ_NAMESPACE, READ_NAMESPACE_TOOL

__all__ = [
    "BYTE_THRESHOLD",
    "LINE_THRESHOLD",
    "READ_NAMESPACE",
    "READ_NAMESPACE_TOOL",
    "REFERENCE_PREFIX",
    "SEED_LARGE_TOOLS",
    "NamespacePolicy",
    "digest_of",
    "find_references",
    "key_information",
    "reference_for",
]
