"""Check a prompt-override directory when it is set, not when a turn first renders from it.

An override is rendered deep inside a turn (the main window, a topic window): a missing
directory was silently ignored, and a template naming a variable the package does not pass
ended the turn in a ``KeyError`` traceback after its input was saved. Each override file is
checked against the packaged prompt of the same name instead: readable UTF-8, braces that
parse, and only the packaged prompt's variables, declared in its header before they are used.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from string import Formatter

from langgraph_topics.errors import InputError
from langgraph_topics.prompts.loader import LANGUAGES, PromptFile, parse_prompt

_FIELD_ROOT = re.compile(r"[.\[]")


def _packaged(name: str, language: str) -> PromptFile | None:
    packaged = resources.files("langgraph_topics.prompts") / language / f"{name}.md"
    if not packaged.is_file():
        return None
    return parse_prompt(name, language, packaged.read_text("utf-8"), f"package:{language}/{name}")


def _line_of(text: str, needle: str) -> int:
    """The 1-based line of ``text`` where ``needle`` first appears (1 when it does not)."""
    place = text.find(needle)
    return text.count("\n", 0, place) + 1 if place >= 0 else 1


def check_override(path: Path, language: str) -> None:
    """Refuse an override file that would fail when rendered (one line naming file:line).

    A file named after no packaged prompt is never read, and is left alone.
    """
    known = _packaged(path.stem, language)
    if known is None:
        return
    try:
        text = path.read_text("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not UTF-8 ({error.reason} at byte {error.start})") from None
    except OSError as error:
        raise InputError(f"{path}: unreadable ({error.strerror or error})") from None
    override = parse_prompt(path.stem, language, text, str(path))
    offered = ", ".join(known.variables) or "none"
    for variable in override.variables:
        if variable not in known.variables:
            raise InputError(
                f"{path}:{_line_of(text, 'variables:')}: unknown variable {variable!r} in the "
                f"header; {path.stem} is given: {offered}"
            )
    try:
        parsed = list(Formatter().parse(override.template))
    except ValueError as error:
        raise InputError(
            f"{path}: {error} (write {{{{ and }}}} for braces meant literally)"
        ) from None
    for field in (name for _, name, _, _ in parsed if name is not None):
        root = _FIELD_ROOT.split(field, maxsplit=1)[0]
        line = _line_of(text, "{" + field)
        if root not in known.variables:
            raise InputError(
                f"{path}:{line}: unknown variable {{{field}}}; {path.stem} is given: {offered} "
                "(write {{ and }} for braces meant literally)"
            )
        if root not in override.variables:
            raise InputError(
                f"{path}:{line}: variable {{{root}}} is used but not declared in the header "
                f"(---\\nvariables: {root}, …\\n---)"
            )


def check_prompt_dir(directory: Path, setting: str) -> None:
    """Refuse a missing prompt directory, or an override in it that would fail when rendered.

    Args:
        directory: The directory of ``<language>/<name>.md`` overrides.
        setting: How the user set it (``LANGGRAPH_TOPICS_PROMPT_DIR``, ``prompt_dir``), named
            in the error.

    Raises:
        InputError: One line naming the setting, or the file and line.
    """
    if not directory.is_dir():
        what = "is not a directory" if directory.exists() else "no such directory"
        raise InputError(
            f"{setting}={directory}: {what} (it should hold <language>/<name>.md prompt "
            "overrides); fix or unset it"
        )
    for language in LANGUAGES:
        folder = directory / language
        if folder.is_dir():
            for path in sorted(folder.glob("*.md")):
                check_override(path, language)
