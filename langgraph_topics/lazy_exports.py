"""Public names of a package loaded on first use (PEP 562), so importing it stays cheap.

A package whose ``__init__`` re-exported its modules' names eagerly made every import of any
of its submodules pay for all of them: ``langgraph_topics.stores.durable`` loaded Chroma and
LangGraph, and ``langgraph-topics --help`` took seconds. A package lists its names and their
modules instead; a name is imported the first time it is read, and kept.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose public names are ``exports``.

    Args:
        package: The package's ``__name__``.
        exports: Each public name and the module that defines it.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        setattr(sys.modules[package], name, value)  # looked up once
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
