"""Load prompt files by name and language; a user directory can override any of them.

A prompt file is Markdown with a header listing its variables::

    ---
    variables: topic_name, topic_brief
    ---
    text with {topic_name} ...

Variables are substituted with LangChain's f-string ``PromptTemplate``; values are inserted
verbatim (never re-parsed), so message text containing braces or tags cannot change a prompt.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from string import Formatter

from langchain_core.prompts import PromptTemplate

PROMPT_DIR_ENV = "LANGGRAPH_TOPICS_PROMPT_DIR"
LANGUAGES = ("zh", "en")


@dataclass(frozen=True)
class PromptFile:
    """A parsed prompt file."""

    name: str
    language: str
    variables: tuple[str, ...]
    template: str
    source: str

    def render(self, **values: object) -> str:
        """Fill in the declared variables (all of them are required)."""
        missing = [v for v in self.variables if v not in values]
        if missing:
            raise KeyError(f"prompt {self.name}/{self.language} needs {', '.join(missing)}")
        return _compiled(self.template).format(**{v: values[v] for v in self.variables})


@dataclass(frozen=True)
class _Pieces:
    """A template as its literal texts and plain ``{name}`` fields, filled by one join.

    What LangChain's f-string formatter does for such a template (``string.Formatter``:
    the literal text, then ``format(value, spec)`` for each field), without parsing the
    template again on every call: the assembler renders a topic block twice per topic a turn.
    """

    parts: tuple[tuple[str, str | None, str], ...]
    """``(literal text, field name or None, format spec)``, in order."""

    def format(self, **values: object) -> str:
        out: list[str] = []
        for literal, name, spec in self.parts:
            out.append(literal)
            if name is not None:
                out.append(format(values[name], spec))
        return "".join(out)


@lru_cache(maxsize=256)
def _compiled(template: str) -> _Pieces | PromptTemplate:
    """The template parsed once (LangChain's ``PromptTemplate`` checks it).

    Templates whose fields are plain names become :class:`_Pieces`; any other field (an
    attribute, an index, a conversion, a nested spec) is left to the ``PromptTemplate``.
    """
    checked = PromptTemplate.from_template(template)
    parts: list[tuple[str, str | None, str]] = []
    for literal, name, spec, conversion in Formatter().parse(template):
        plain = name is None or (name.isidentifier() and conversion is None)
        if not plain or (spec and "{" in spec):
            return checked
        parts.append((literal, name, spec or ""))
    return _Pieces(tuple(parts))


def parse_prompt(name: str, language: str, text: str, source: str) -> PromptFile:
    """Parse the variables header and the template of a prompt file."""
    variables: tuple[str, ...] = ()
    body = text
    if text.startswith("---\n"):
        header, _, body = text[4:].partition("\n---\n")
        for line in header.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "variables":
                variables = tuple(v.strip() for v in value.split(",") if v.strip())
    return PromptFile(name, language, variables, body.strip("\n") + "\n", source)


@lru_cache(maxsize=128)
def _read(name: str, language: str, override_dir: str | None) -> PromptFile:
    for directory in filter(None, [override_dir, os.environ.get(PROMPT_DIR_ENV)]):
        candidate = Path(directory) / language / f"{name}.md"
        if candidate.is_file():
            return parse_prompt(name, language, candidate.read_text("utf-8"), str(candidate))
    packaged = resources.files("langgraph_topics.prompts") / language / f"{name}.md"
    if not packaged.is_file():
        raise FileNotFoundError(f"no prompt named {name!r} for language {language!r}")
    return parse_prompt(name, language, packaged.read_text("utf-8"), f"package:{language}/{name}")


def load_prompt(
    name: str, language: str = "en", override_dir: str | Path | None = None
) -> PromptFile:
    """Load the prompt ``name`` in ``language`` (``zh`` or ``en``).

    Looks in ``override_dir``, then in ``$LANGGRAPH_TOPICS_PROMPT_DIR``, then in the package;
    each directory holds ``<language>/<name>.md``.
    """
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {language!r}")
    return _read(name, language, str(override_dir) if override_dir else None)
