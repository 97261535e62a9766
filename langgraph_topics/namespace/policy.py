"""Which tool results go to the namespace: over 2,048 bytes, over 50 lines, or always-large."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from langgraph_topics.state.records import StoredMessage

if TYPE_CHECKING:
    from langgraph_topics.settings import Settings

BYTE_THRESHOLD = 2048
LINE_THRESHOLD = 50
"""Seed 001 T2, decision 1: ``len > 2048 || lines > 50``."""
SEED_LARGE_TOOLS = ("read_file", "list_directory", "grep", "diff_files")
"""Seed 001 T2's always-large tools (``is_always_large_tool``): not the default of
``Settings.large_tools``, which is empty (docs/tool-results.md says why); pass it to opt in."""


@dataclass(frozen=True)
class NamespacePolicy:
    """The thresholds of one memory (``Settings.namespace_bytes`` and friends)."""

    max_bytes: int = BYTE_THRESHOLD
    max_lines: int = LINE_THRESHOLD
    large_tools: Collection[str] = ()
    """Tools whose results always go to the namespace, whatever their size (none by default;
    ``SEED_LARGE_TOOLS`` are the seed's)."""
    enabled: bool = True

    @classmethod
    def of(cls, settings: Settings) -> NamespacePolicy:
        """The policy of a memory's settings."""
        return cls(
            max_bytes=settings.namespace_bytes,
            max_lines=settings.namespace_lines,
            large_tools=frozenset(settings.large_tools),
            enabled=settings.tool_namespace,
        )

    def is_large(self, message: StoredMessage) -> bool:
        """Whether a message is a tool result to keep in the namespace."""
        if not self.enabled or message["role"] != "tool":
            return False
        content = message["content"]
        if not content:
            return False
        if message.get("name", "") in self.large_tools:
            return True
        return (
            len(content.encode("utf-8")) > self.max_bytes
            or len(content.splitlines()) > self.max_lines
        )
