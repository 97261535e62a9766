"""The ``read_namespace`` tool offered to the responder while its window shows references."""

from __future__ import annotations

from langchain_core.tools import BaseTool, tool

READ_NAMESPACE = "read_namespace"


@tool(READ_NAMESPACE)
def read_namespace(reference: str) -> str:
    """Read the full text of a stored tool result shown as <namespace://tool/...>.

    The window shows a large tool result as its reference and a preview of its key
    information. Call this when you need the exact text (a line, a value, the whole list):
    for your next answer the full text replaces the reference, once. ``reference``: the
    ``namespace://tool/...`` reference, as shown.
    """
    return reference  # never executed: the graph shows the text and asks again


READ_NAMESPACE_TOOL: BaseTool = read_namespace
