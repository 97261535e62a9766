"""Strict reading of the seeds' XML reply formats.

Replies are not parsed as XML documents: models leave ``&`` and ``<`` unescaped in free text.
Instead the known elements are located by name, and everything the format requires is checked
(exactly one root element, required children present, numbers that are numbers). Whatever fails
raises :class:`ReplyFormatError`, whose message is fed back to the model on the retry.
"""

from __future__ import annotations

import re
from html import unescape


class ReplyFormatError(ValueError):
    """A model reply that does not follow the required format (the message says why)."""


class DegenerateReply(ReplyFormatError):
    """A well-formed reply whose summary loops or whose card has empty or repeated facts.

    Not asked again (a model caught in a loop tends to loop again): the native back end serves
    the call at once (seed 001 T3).
    """


_ATTRIBUTE = re.compile(r"""([A-Za-z_][\w.-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')""")


def root_element(reply: str, tag: str) -> str:
    """The inner text of the one ``<tag>`` element of the reply.

    Raises:
        ReplyFormatError: No such element, an unclosed one (a truncated reply), or several.
    """
    opened = re.findall(rf"<{tag}(?:\s[^>]*)?>", reply)
    if not opened:
        raise ReplyFormatError(f"the reply has no <{tag}> element")
    if len(opened) > 1:
        raise ReplyFormatError(f"the reply has {len(opened)} <{tag}> elements; exactly one needed")
    match = re.search(rf"<{tag}(?:\s[^>]*)?>(.*)</{tag}\s*>", reply, re.DOTALL)
    if match is None:
        raise ReplyFormatError(f"the <{tag}> element is not closed (was the reply cut off?)")
    return match.group(1)


def child_text(body: str, tag: str, *, required: bool = False) -> str | None:
    """The unescaped text of the single ``<tag>`` child of ``body`` (``None`` when absent).

    Raises:
        ReplyFormatError: The child is required and missing, unclosed, or repeated.
    """
    matches = re.findall(rf"<{tag}(?:\s[^>]*)?>(.*?)</{tag}\s*>", body, re.DOTALL)
    if not matches:
        if re.search(rf"<{tag}(?:\s[^>]*)?>", body):
            raise ReplyFormatError(f"the <{tag}> element is not closed")
        if required:
            raise ReplyFormatError(f"the <{tag}> element is missing")
        return None
    if len(matches) > 1:
        raise ReplyFormatError(f"<{tag}> appears {len(matches)} times; at most once allowed")
    return unescape(str(matches[0])).strip()


def elements(body: str, tag: str) -> list[tuple[dict[str, str], str]]:
    """Every ``<tag ...>text</tag>`` or ``<tag .../>`` of ``body``: (attributes, inner text)."""
    found: list[tuple[dict[str, str], str]] = []
    pattern = rf"<{tag}((?:\s[^>]*?)?)(?:/>|>(.*?)</{tag}\s*>)"
    for match in re.finditer(pattern, body, re.DOTALL):
        attributes = {
            name: unescape(double if double is not None and double != "" else single or "")
            for name, double, single in _ATTRIBUTE.findall(match.group(1) or "")
        }
        found.append((attributes, match.group(2) or ""))
    opened = len(re.findall(rf"<{tag}(?:\s[^>]*)?>", body))
    if opened != len(found):
        raise ReplyFormatError(f"{opened - len(found)} <{tag}> element(s) not closed")
    return found


def parse_score(text: str | None, tag: str) -> float:
    """A score in [0, 1]; anything else is rejected (never clamped), so the model is asked again.

    Raises:
        ReplyFormatError: Missing, not a number, or outside [0, 1].
    """
    if text is None or not text.strip():
        raise ReplyFormatError(f"<{tag}> is missing or empty")
    try:
        score = float(text.strip())
    except ValueError:
        raise ReplyFormatError(f"<{tag}> must be a number between 0 and 1, got {text!r}") from None
    if not 0.0 <= score <= 1.0:  # NaN fails this too
        raise ReplyFormatError(f"<{tag}> must be between 0 and 1, got {score}")
    return score
